// The algorithms a zone can use: their configuration names, the names the
// Lua script dispatches on, and the short tag in their Redis keys (so that
// changing a zone's algorithm never reads state of another shape).
#pragma once

#include <cstdint>
#include <string_view>

#include "base/rrl_types.h"

namespace rrl {

struct Algorithm {
    rrl_algorithm_e id;
    std::string_view name;     // in nginx.conf and in the script's ARGV
    std::string_view key_tag;  // suffix of its Redis keys
};

// By name or alias ("gcra" is leaky_bucket), exactly; nullptr: none.
const Algorithm* find_algorithm(std::string_view name);
// By id (rrl_algorithm_e); nullptr: none.
const Algorithm* algorithm(int id);

// The burst an algorithm works with, given "burst=" (or RRL_BURST_UNSET):
// token_bucket's bucket holds N tokens unless told otherwise; the others
// have no extra allowance unless told.
std::uint64_t effective_burst(const Algorithm& a, std::uint64_t limit,
                              std::uint64_t burst);
// The most one request may cost and still pass, on an idle key: N + burst
// for the window algorithms, the bucket (burst) for token_bucket, 1 + burst
// for leaky_bucket. It is X-RateLimit-Limit. 0: no request can ever pass.
std::uint64_t capacity(const Algorithm& a, std::uint64_t limit,
                       std::uint64_t burst);
// The largest capacity a zone of the algorithm may have: sliding_log keeps
// one sorted-set member per unit of cost, and a call adds up to the
// capacity at once, so N + burst is at most RRL_SLIDING_LOG_MAX_CAPACITY (a
// call's work stays within a few ms of Redis); the others keep a few
// numbers whatever N, and have no bound but N's and burst's own
// (UINT64_MAX).
std::uint64_t max_capacity(const Algorithm& a);
// How long a key's state can matter, in ms: a window (fixed_window,
// sliding_log), two (sliding_window), or the time to refill or drain a
// whole bucket. Every duration in the script's reply is at most this; zones
// over RRL_MAX_STATE_MS are refused. Saturates at UINT64_MAX, which a zone
// of no limit (0) gets.
std::uint64_t state_lifetime_ms(const Algorithm& a, std::uint64_t limit,
                                std::uint64_t period_ms, std::uint64_t burst);

}  // namespace rrl
