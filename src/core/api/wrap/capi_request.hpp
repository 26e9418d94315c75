// The C API's request handle: the core's Request itself, so that a handle
// made in the caller's memory is the object (rrl_request_make()). For the
// wrappers that take one (capi_engine.cpp, capi_lease_call.cpp, ...).
#pragma once

#include "api/rrl_request.h"
#include "decide/request.hpp"

struct rrl_request_s {
    rrl::Request request;
};
