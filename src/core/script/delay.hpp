// limit_req's delay=D for leaky_bucket (gcra): how long a request that
// passed waits in nginx before it goes on. The script's pass reply has
// reset_after_us = ceil(ahead + cost * interval), where ahead is how far
// the bucket's TAT was ahead of now: the request's slot comes cost
// intervals before that, and the first D excess requests go at once, so
// the wait is reset_after_us - (cost + D) * interval. The local zone
// replies in the same shape (local_algorithms.cpp), so fail local waits the same way.
// A wait is never longer than the zone's own rate and burst allow, as
// limit_req's: (B + 1 - cost - D) x the zone's interval, whatever an
// override makes the interval.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

namespace rrl {

// One limit's wait, in us (0: none). delay: D, RRL_DELAY_NONE for nodelay;
// share: K of local_share=1/K when the local zone decided (its limit and
// burst are this server's share, and so is D), else 1.
std::int64_t limit_delay_us(const rrl_call_limit_t& limit,
                            const rrl_limit_result_t& result,
                            std::uint64_t share);

// The request's wait: 0 unless it passed, else the longest of its limits'.
std::int64_t request_delay_us(const rrl_call_limit_t* limits,
                              const rrl_limit_result_t* results, std::size_t n,
                              bool passed, std::uint64_t share);

}  // namespace rrl
