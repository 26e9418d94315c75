// Shared by the extern "C" files of the core (capi*.cpp): no exception
// ever crosses into nginx, and values are copied out as snprintf does.
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "base/guard.hpp"
#include "base/log.hpp"
#include "api/rrl.h"
#include "base/rrl_engine_types.h"

namespace rrl::engine {
class Engine;
}

namespace rrl::capi {

using rrl::guarded;

// The worker's engine behind the C API's handle (capi_engine.cpp).
engine::Engine& engine_of(rrl_engine_t* engine) noexcept;

// snprintf's convention: the whole length, written only when it fits
// (buf may be NULL when size is 0: memcpy must not see it then).
inline size_t put(const std::string& value, char* buf, size_t size) noexcept {
    if (buf != nullptr && value.size() <= size) {
        std::memcpy(buf, value.data(), value.size());
    }
    return value.size();
}

}  // namespace rrl::capi
