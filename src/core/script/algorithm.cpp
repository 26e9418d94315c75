#include "script/algorithm.hpp"

#include <algorithm>
#include <cmath>

namespace rrl {

namespace {

constexpr Algorithm algorithms[] = {
    {RRL_FIXED_WINDOW, "fixed_window", "fw"},
    {RRL_SLIDING_LOG, "sliding_log", "sl"},
    {RRL_SLIDING_WINDOW, "sliding_window", "sw"},
    {RRL_TOKEN_BUCKET, "token_bucket", "tb"},
    {RRL_LEAKY_BUCKET, "leaky_bucket", "lb"},
};

static_assert(sizeof(algorithms) / sizeof(algorithms[0]) ==
              RRL_ALGORITHM_COUNT);

struct Alias {
    std::string_view name;
    rrl_algorithm_e id;
};

constexpr Alias aliases[] = {
    {"gcra", RRL_LEAKY_BUCKET},
};

}  // namespace

const Algorithm* find_algorithm(std::string_view name) {
    for (const Algorithm& a : algorithms) {
        if (a.name == name) return &a;
    }
    for (const Alias& a : aliases) {
        if (a.name == name) return algorithm(a.id);
    }
    return nullptr;
}

const Algorithm* algorithm(int id) {
    if (id < 0 || id >= RRL_ALGORITHM_COUNT) return nullptr;
    return &algorithms[id];
}

std::uint64_t effective_burst(const Algorithm& a, std::uint64_t limit,
                              std::uint64_t burst) {
    if (burst != RRL_BURST_UNSET) return burst;
    return a.id == RRL_TOKEN_BUCKET ? limit : 0;
}

std::uint64_t capacity(const Algorithm& a, std::uint64_t limit,
                       std::uint64_t burst) {
    switch (a.id) {
        case RRL_TOKEN_BUCKET:
            return burst;
        case RRL_LEAKY_BUCKET:
            return burst + 1;
        default:
            return limit + burst;
    }
}

std::uint64_t max_capacity(const Algorithm& a) {
    return a.id == RRL_SLIDING_LOG ? RRL_SLIDING_LOG_MAX_CAPACITY : UINT64_MAX;
}

std::uint64_t state_lifetime_ms(const Algorithm& a, std::uint64_t limit,
                                std::uint64_t period_ms, std::uint64_t burst) {
    // no limit: a bucket never drains (its zone is refused)
    if (limit == 0) return UINT64_MAX;
    // in floating point: (burst + 1) * period overflows 64 bits at extremes
    double period = static_cast<double>(period_ms);
    double lifetime = period;

    switch (a.id) {
        case RRL_SLIDING_WINDOW:
            lifetime = 2 * period;
            break;
        case RRL_TOKEN_BUCKET:
        case RRL_LEAKY_BUCKET:
            lifetime = std::max(period, static_cast<double>(capacity(a, limit,
                                                                     burst)) *
                                            period / static_cast<double>(limit));
            break;
        default:
            break;
    }

    if (lifetime >= 18446744073709551615.0) return UINT64_MAX;
    return static_cast<std::uint64_t>(std::ceil(lifetime));
}

}  // namespace rrl
