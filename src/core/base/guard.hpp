// No exception leaves the core: at the C API's edge (api/wrap/) and where
// the engine runs a callback of the loop's, a body runs guarded.
#pragma once

#include <exception>
#include <string>

#include "base/log.hpp"

namespace rrl {

// Runs body; an exception is logged as "what: why" and gives on_error.
template <typename F, typename R>
R guarded(const char* what, R on_error, F&& body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        rrl::log(LogLevel::error, std::string(what) + ": " + e.what());
    } catch (...) {
        rrl::log(LogLevel::error, std::string(what) + ": unknown exception");
    }
    return on_error;
}

}  // namespace rrl
