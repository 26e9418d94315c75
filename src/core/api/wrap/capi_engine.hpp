// The engine behind the C API's handle, for the wrappers whose calls go
// to Redis (renewals, settlements).
#pragma once

#include "api/rrl_engine.h"
#include "engine/engine.hpp"

namespace rrl::capi {

rrl::engine::Engine& engine_of(rrl_engine_t* engine);

}  // namespace rrl::capi
