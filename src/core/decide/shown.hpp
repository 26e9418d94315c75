// What a limited request shows the client and the log, from its limits
// (rrl_call_limit_t, those with a key) and its decision: the rate limit
// header fields (legacy X-RateLimit-*, the draft's RateLimit-Policy and
// RateLimit, Retry-After), the variables $redis_ratelimit_* and the
// problem+json body of a rejection. With show::local_limits, the limits
// are those this server allows alone (local_share=1/K).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/rrl_shown_types.h"
#include "base/small_vector.hpp"

namespace rrl {

struct Field {
    std::string_view name;
    std::string value;
};

// In the order a response has them; none when the zone names cannot be
// written (not printable ASCII).
using Fields = SmallVector<Field, RRL_SHOWN_FIELDS>;
Fields shown_fields(const rrl_shown_t& shown);

// The name of variable RRL_VAR_*, without "$"; nullptr: no such variable.
const char* shown_variable_name(int variable);

// nullopt: the variable is not found (not limited, not decided, no reply)
std::optional<std::string> shown_variable(int variable,
                                          const rrl_shown_t& shown);

std::string shown_problem(unsigned status, const rrl_shown_t& shown);

}  // namespace rrl
