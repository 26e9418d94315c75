#include "local/local_zone.hpp"

#include <algorithm>

#include "script/algorithm.hpp"

namespace rrl {

LocalShare local_share(int algorithm, std::uint64_t limit, std::uint64_t burst,
                       std::uint64_t share) {
    share = std::max<std::uint64_t>(share, 1);

    LocalShare s{std::max<std::uint64_t>(limit / share, 1), burst / share};

    if (algorithm == RRL_TOKEN_BUCKET && s.burst == 0) s.burst = 1;
    return s;
}

std::uint64_t local_capacity(int algorithm, std::uint64_t limit,
                             std::uint64_t burst, std::uint64_t share) {
    const Algorithm* a = rrl::algorithm(algorithm);
    if (a == nullptr) return 0;
    LocalShare s = local_share(algorithm, limit, burst, share);
    return capacity(*a, s.limit, s.burst);
}

bool local_zone_check(const LocalLimit& limit, std::uint64_t share,
                      std::int64_t now_us, const rrl_local_entry_t* entry,
                      rrl_local_entry_t* next, std::int64_t* values) {
    static const rrl_local_state_t none{};

    LocalShare s =
        local_share(limit.algorithm, limit.limit, limit.burst, share);
    LocalLimit local{limit.algorithm, s.limit, limit.period_ms, s.burst,
                     limit.cost};
    const rrl_local_state_t& state =
        entry != nullptr && entry->end_us > now_us ? entry->state : none;
    rrl_limit_result_t result{};

    if (!local_check(local, now_us, state, &next->state, &result)) {
        return false;
    }

    // a pass's reset time is how long the state matters
    next->end_us = now_us + result.reset_after_us;

    values[0] = result.passed;
    values[1] = result.remaining;
    values[2] = result.reset_after_us;
    values[3] = result.retry_after_us;
    return true;
}

std::size_t local_zone_decide(const rrl_local_limit_t* limits, std::size_t n,
                              std::uint64_t share, std::int64_t now_us,
                              rrl_local_entry_t* next, std::int64_t* values) {
    bool passed = true;

    for (std::size_t i = 0; i < n; i++) {
        const rrl_local_limit_t& l = limits[i];
        std::int64_t* v = values + RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i;

        if (!local_zone_check(
                {l.algorithm, l.limit, l.period_ms, l.burst, l.cost}, share,
                now_us, l.entry, &next[i], v)) {
            return 0;
        }
        passed = passed && v[0] != 0;
    }

    values[0] = passed;
    values[1] = now_us;
    return RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n;
}

}  // namespace rrl
