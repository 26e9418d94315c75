// The offered traffic of each pattern, at exact microsecond times.
#include <algorithm>

#include "simulate.hpp"

namespace sim {

namespace {

// a * b / c without overflow, rounded down (all non-negative)
std::int64_t mul_div(std::int64_t a, std::int64_t b, std::int64_t c) {
    return static_cast<std::int64_t>(static_cast<__int128>(a) * b / c);
}

// count requests spread evenly over [from, from + span)
void spread(std::vector<std::int64_t>* times, std::int64_t from,
            std::int64_t span, std::uint64_t count,
            std::int64_t duration_us) {
    auto n = static_cast<std::int64_t>(count);
    for (std::int64_t i = 0; i < n; i++) {
        std::int64_t t = from + mul_div(i, span, n);
        if (t >= 0 && t < duration_us) times->push_back(t);
    }
}

}  // namespace

bool parse_pattern(std::string_view name, Pattern* pattern) {
    if (name == "steady") {
        *pattern = Pattern::steady;
    } else if (name == "boundary") {
        *pattern = Pattern::boundary;
    } else if (name == "idle-burst") {
        *pattern = Pattern::idle_burst;
    } else {
        return false;
    }
    return true;
}

const char* pattern_name(Pattern pattern) {
    switch (pattern) {
        case Pattern::steady:
            return "steady";
        case Pattern::boundary:
            return "boundary";
        case Pattern::idle_burst:
            return "idle-burst";
    }
    return "?";
}

const char* pattern_description(Pattern pattern) {
    switch (pattern) {
        case Pattern::steady:
            return "one client offering 2N per PERIOD, evenly spaced";
        case Pattern::boundary:
            return "N requests in the last tenth of a window, N in the first "
                   "tenth of the next; every 3 PERIODs";
        case Pattern::idle_burst:
            return "idle for 1.5 PERIODs, a burst of 3N (1 per us), then N "
                   "per PERIOD, evenly spaced";
    }
    return "?";
}

std::vector<std::int64_t> pattern_times(Pattern pattern, std::uint64_t limit,
                                        std::int64_t period_us,
                                        std::int64_t duration_us) {
    std::vector<std::int64_t> times;
    auto n = static_cast<std::int64_t>(limit);

    switch (pattern) {
        case Pattern::steady:
            for (std::int64_t k = 0;; k++) {
                std::int64_t t = mul_div(k, period_us, 2 * n);
                if (t >= duration_us) break;
                times.push_back(t);
            }
            break;

        case Pattern::boundary: {
            std::int64_t tenth = period_us / 10;
            for (std::int64_t b = period_us; b - tenth < duration_us;
                 b += 3 * period_us) {
                spread(&times, b - tenth, tenth, limit, duration_us);
                spread(&times, b, tenth, limit, duration_us);
            }
            break;
        }

        case Pattern::idle_burst: {
            std::int64_t start = period_us + period_us / 2;
            for (std::int64_t i = 0; i < 3 * n; i++) {
                if (start + i < duration_us) times.push_back(start + i);
            }
            for (std::int64_t k = 1;; k++) {
                std::int64_t t = start + mul_div(k, period_us, n);
                if (t >= duration_us) break;
                times.push_back(t);
            }
            break;
        }
    }

    std::sort(times.begin(), times.end());
    return times;
}

}  // namespace sim
