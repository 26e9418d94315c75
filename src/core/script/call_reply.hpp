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

// Decodes the call's reply as decode_reply() does (script_reply.hpp), and
// refuses (false, logged) one where a limit has more remaining than its
// zone can ever hold: no reply of the script's. A reply of reply_values()
// integers sets each limit's override, and the limit, period and burst of
// an applied one (block: limit 0) in limits; one of 4 per limit (the deny
// cache's, the local zone's) leaves them as they are. An unlimited limit
// is never the reported one. Each limit's lease_granted and lease_ttl_us
// are set: a lease limit's from a reply of reply_values() integers when
// the request passed, else 0 (on false too); such a reply is refused when
// a grant is more than W (max(lease_want, cost, 1)), less than max(cost,
// 1) on a pass, not 0 on a rejected limit, or a lifetime is negative or
// over the state's bound (RRL_MAX_STATE_MS).
bool call_reply_decode(const std::int64_t* values, std::size_t nvalues,
                       rrl_call_limit_t* limits, std::size_t n,
                       rrl_limit_result_t* results, rrl_decision_t* decision);

// The log line of the first limit whose override is invalid (once
// decoded), "" when none is.
std::string invalid_override_message(const rrl_call_limit_t* limits,
                                     std::size_t n);

}  // namespace rrl
