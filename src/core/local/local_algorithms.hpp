// Local decisions, for "redis_ratelimit_fail local": the algorithms of
// lua/*.lua on a fixed-size state the caller keeps (a node of a shared
// memory zone) instead of a Redis key. The arithmetic is the script's, in
// the same order and in doubles as Lua's numbers are, so that a local
// result is the script's to the microsecond given the same time and the
// same history. sliding_log is decided as sliding_window: its log of
// timestamps does not fit a fixed-size state.
//
// rrl_local_state_t, per algorithm (all zero: no state):
//   fixed_window     a = window index, b = count
//   sliding_window   a = window index, b = current count, c = previous count
//   token_bucket     a = time of c (us, 0: no state), c = tokens
//   leaky_bucket     a = TAT (whole us), c = its fraction of a us
#pragma once

#include <cstdint>

#include "base/rrl_types.h"

namespace rrl {

struct LocalLimit {
    int algorithm;
    std::uint64_t limit;      // N of rate=Nr/PERIOD
    std::uint64_t period_ms;  // PERIOD
    std::uint64_t burst;      // as the algorithm uses it: effective_burst()'s
    std::uint64_t cost;
};

// Decides one limit at now_us as the script would on a key holding state.
// False for an unknown algorithm or a zero limit or period. Otherwise
// *result is the script's reply for this limit, and *next the state the
// script would store if the request passes (every limit of it: the state
// to keep then).
bool local_check(const LocalLimit& limit, std::int64_t now_us,
                 const rrl_local_state_t& state, rrl_local_state_t* next,
                 rrl_limit_result_t* result);

}  // namespace rrl
