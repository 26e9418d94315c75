// The script's reply, checked and turned into a decision for one request:
// which limit the headers show and how long a rejected client should wait.
//
// Reply layout (integers): passed, now_us, then per limit
//     passed, remaining, reset_after_us, retry_after_us
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rrl.h"

namespace rrl {

struct Decoded {
    std::vector<rrl_limit_result_t> limits;
    rrl_decision_t decision;
};

// Returns nullopt (and says why in *error) when the reply is not one the
// script can have sent for nlimits limits. A limit marked in hidden (an
// unlimited override) is never the reported one unless all are.
std::optional<Decoded> decode_reply(const std::int64_t* values, std::size_t n,
                                    std::size_t nlimits, std::string* error,
                                    const std::vector<bool>& hidden = {});

// Whole seconds, rounded up: a client that waits that long is not early.
std::int64_t seconds_up(std::int64_t us);

// Retry-After: whole seconds, rounded up, at least 1.
std::int64_t retry_after_seconds(std::int64_t retry_after_us);

bool is_noscript(std::string_view error_reply);

}  // namespace rrl
