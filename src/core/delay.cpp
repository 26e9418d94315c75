#include "delay.hpp"

#include <algorithm>
#include <cmath>

#include "local_zone.hpp"

namespace rrl {

std::int64_t limit_delay_us(const rrl_call_limit_t& limit,
                            const rrl_limit_result_t& result,
                            std::uint64_t share) {
    if (limit.algorithm != RRL_LEAKY_BUCKET || limit.delay == RRL_DELAY_NONE ||
        !result.passed || limit.limit == 0) {
        return 0;
    }

    share = std::max<std::uint64_t>(share, 1);
    LocalShare s =
        local_share(limit.algorithm, limit.limit, limit.burst, share);
    std::uint64_t delay = limit.delay / share;

    // in doubles, as the script computes: (cost + D) * period overflows
    // 64 bits at extremes
    double period_us = static_cast<double>(limit.period_ms) * 1000;
    double excess =
        static_cast<double>(limit.cost) + static_cast<double>(delay);
    double free_us =
        std::ceil(excess * period_us / static_cast<double>(s.limit));

    double wait = static_cast<double>(result.reset_after_us) - free_us;

    // both sides rounded up to a us: a wait of 1 us may be rounding alone
    if (wait <= 1) return 0;
    return static_cast<std::int64_t>(wait);
}

std::int64_t request_delay_us(const rrl_call_limit_t* limits,
                              const rrl_limit_result_t* results, std::size_t n,
                              bool passed, std::uint64_t share) {
    std::int64_t wait = 0;
    if (!passed) return 0;
    for (std::size_t i = 0; i < n; i++) {
        wait = std::max(wait, limit_delay_us(limits[i], results[i], share));
    }
    return wait;
}

}  // namespace rrl
