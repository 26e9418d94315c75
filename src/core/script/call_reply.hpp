// The script's reply to a request's check, decoded into the request's
// limits: the overrides applied and the leases granted read off it, then
// each limit's result and the request's decision (script_reply.hpp), refused when
// it is not one the script can have sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

namespace rrl {

// See rrl_call_reply_decode(): false (logged) on a reply refused.
bool call_reply_decode(const std::int64_t* values, std::size_t nvalues,
                       rrl_call_limit_t* limits, std::size_t n,
                       rrl_limit_result_t* results, rrl_decision_t* decision);

// The log line of the first limit whose override is invalid (once
// decoded), "" when none is.
std::string invalid_override_message(const rrl_call_limit_t* limits,
                                     std::size_t n);

}  // namespace rrl
