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

#include "base/rrl_types.h"
#include "base/small_vector.hpp"

namespace rrl {

struct Decoded {
    SmallVector<rrl_limit_result_t, 8> limits;
    rrl_decision_t decision;
};

// Returns nullopt (and says why in *error) when the reply is not one the
// script can have sent for nlimits limits. A limit marked in hidden (nlimits
// flags, or none: an unlimited override) is never the reported one unless all are.
std::optional<Decoded> decode_reply(const std::int64_t* values, std::size_t n,
                                    std::size_t nlimits, std::string* error,
                                    const bool* hidden = nullptr);

// decode_reply() into results (nlimits of them) and *decision: false, and
// logged as an unexpected script reply, when it is not one the script can
// have sent. For a reply of 4 integers a limit (the local zone's).
bool decode_reply_into(const std::int64_t* values, std::size_t n,
                       std::size_t nlimits, rrl_limit_result_t* results,
                       rrl_decision_t* decision);

// The decision on results (one per limit, each valid) at now_us: the
// reported limit and its header values, as decode_reply() sets them; a
// limit marked in hidden (n flags, or none) is never the reported one
// unless all are. For a decision made without the script's reply (the
// lease table's, the deny cache's), with no reply to decode.
rrl_decision_t decide_results(const rrl_limit_result_t* results,
                              std::size_t n, std::int64_t now_us,
                              const bool* hidden = nullptr);

// Whole seconds, rounded up: a client that waits that long is not early.
std::int64_t seconds_up(std::int64_t us);

// Retry-After: whole seconds, rounded up, at least 1.
std::int64_t retry_after_seconds(std::int64_t retry_after_us);

bool is_noscript(std::string_view error_reply);

}  // namespace rrl
