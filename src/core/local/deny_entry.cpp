#include "local/deny_entry.hpp"

#include "script/algorithm.hpp"

namespace rrl {

namespace {

// No zone keeps state longer (zones that would are refused).
constexpr std::int64_t max_duration_us =
    static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;

bool same_zone(const rrl_deny_limit_t& a, const rrl_deny_limit_t& b) {
    return a.algorithm == b.algorithm && a.limit == b.limit &&
           a.period_ms == b.period_ms && a.burst == b.burst &&
           a.redis == b.redis;
}

// A smaller cost may pass before the end; a larger one waits longer,
// except in a fixed window, which every cost waits out to its end.
bool covered_cost(const rrl_deny_limit_t& learned,
                  const rrl_deny_limit_t& asked) {
    if (learned.algorithm == RRL_FIXED_WINDOW) return asked.cost >= learned.cost;
    return asked.cost == learned.cost;
}

bool within_capacity(const rrl_deny_limit_t& l) {
    const Algorithm* a = algorithm(l.algorithm);
    return a != nullptr && l.cost <= capacity(*a, l.limit, l.burst);
}

}  // namespace

bool deny_learn(std::int64_t sent_us, std::int64_t now_us,
                const rrl_deny_limit_t& limit, const rrl_limit_result_t& result,
                rrl_deny_entry_t* entry) {
    std::int64_t retry = result.retry_after_us;
    std::int64_t reset = result.reset_after_us;

    if (result.passed != 0 || retry <= 0 || retry > max_duration_us ||
        reset < 0 || reset > max_duration_us || result.remaining < 0 ||
        !within_capacity(limit)) {
        return false;
    }

    std::int64_t until = sent_us + retry;

    if (until <= now_us) return false;

    *entry = {limit,
              until,
              now_us + retry,
              sent_us + reset,
              result.remaining,
              0,
              limit.limit,
              limit.period_ms,
              limit.burst};
    return true;
}

bool deny_applies(const rrl_deny_entry_t& entry, const rrl_deny_limit_t& limit,
                  std::int64_t now_us, std::int64_t* values) {
    if (!same_zone(entry.limit, limit) || !covered_cost(entry.limit, limit) ||
        !within_capacity(limit) || now_us >= entry.until_us) {
        return false;
    }

    std::int64_t reset = entry.reset_until_us - now_us;

    values[0] = 0;
    values[1] = entry.remaining;
    values[2] = reset > 0 ? reset : 0;
    values[3] = entry.retry_until_us - now_us;
    return true;
}

}  // namespace rrl
