#include "script/delay.hpp"

#include <algorithm>
#include <cmath>

#include "local/local_zone.hpp"

namespace rrl {

namespace {

// units slots of a rate of limit a period_ms, in us rounded up; in
// doubles, as the script computes: units * period overflows 64 bits at
// extremes
double slots_us(double units, std::uint64_t limit, std::uint64_t period_ms) {
    double period_us = static_cast<double>(period_ms) * 1000;
    return std::ceil(units * period_us / static_cast<double>(limit));
}

}  // namespace

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
    double excess = static_cast<double>(limit.cost) +
                    static_cast<double>(limit.delay / share);

    double wait = static_cast<double>(result.reset_after_us) -
                  slots_us(excess, s.limit, limit.period_ms);

    // No longer than the zone's own rate lets a request wait: to the last
    // slot of its burst, less the free ones (limit_req's longest delay).
    // An override's slower rate would park the request, and hold a
    // reloading worker, for hours; Redis has charged it already, so it
    // goes on at the bound: the override still decides how many pass.
    bool own = limit.zone_limit == 0;
    std::uint64_t period_ms = own ? limit.period_ms : limit.zone_period_ms;
    LocalShare zone =
        local_share(limit.algorithm, own ? limit.limit : limit.zone_limit,
                    own ? limit.burst : limit.zone_burst, share);
    double bound =
        slots_us(static_cast<double>(zone.burst) + 1, zone.limit, period_ms) -
        slots_us(excess, zone.limit, period_ms);
    wait = std::min(wait, bound);

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
