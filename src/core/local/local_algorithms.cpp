#include "local/local_algorithms.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace rrl {

namespace {

// The script's view of a limit: every number a Lua number (a double), the
// period in microseconds.
struct Args {
    double limit, period, burst, cost;
};

// Redis turns a Lua number into an integer reply by a C cast.
std::int64_t reply_int(double v) {
    return static_cast<std::int64_t>(v);
}

rrl_limit_result_t result(double passed, double remaining, double reset,
                          double retry) {
    return {static_cast<int>(passed), reply_int(remaining), reply_int(reset),
            reply_int(retry)};
}

// lua/fixed_window.lua
rrl_limit_result_t fixed_window(const Args& l, double now,
                                const rrl_local_state_t& state,
                                rrl_local_state_t* next) {
    double capacity = l.limit + l.burst;
    double window = std::floor(now / l.period);
    double window_end = (window + 1) * l.period;
    double count = 0;

    if (static_cast<double>(state.a) == window) {
        count = static_cast<double>(state.b);
    }

    if (count + l.cost <= capacity) {
        *next = {reply_int(window), reply_int(count + l.cost), 0};
        return result(1, capacity - count - l.cost, window_end - now, 0);
    }

    double reset = 0;
    if (count > 0) reset = window_end - now;
    double retry = window_end - now;
    if (l.cost > capacity) retry = l.period;
    return result(0, std::max(0.0, capacity - count), reset, retry);
}

// lua/sliding_window.lua
rrl_limit_result_t sliding_window(const Args& l, double now,
                                  const rrl_local_state_t& state,
                                  rrl_local_state_t* next) {
    constexpr double slack = 1e-3;

    double capacity = l.limit + l.burst;
    double window = std::floor(now / l.period);
    double start = window * l.period;
    double elapsed = now - start;
    double current = 0, prev = 0;

    double w = static_cast<double>(state.a);
    if (w == window) {
        current = static_cast<double>(state.b);
        prev = state.c;
    } else if (w == window - 1) {
        prev = static_cast<double>(state.b);
    }

    double estimate = prev * (l.period - elapsed) / l.period + current;
    double epsilon = prev * slack / l.period + 1e-12;

    if (estimate + l.cost <= capacity + epsilon) {
        double remaining = std::floor(capacity - estimate - l.cost + epsilon);
        *next = {reply_int(window), reply_int(current + l.cost), prev};
        return result(1, remaining, start + 2 * l.period - now, 0);
    }

    double reset = 0;
    if (current > 0) {
        reset = start + 2 * l.period - now;
    } else if (prev > 0) {
        reset = start + l.period - now;
    }

    double retry = l.period;
    if (l.cost <= capacity) {
        if (current + l.cost > capacity) {
            double e = l.period * (1 - (capacity - l.cost) / current);
            retry = (start + l.period - now) + e;
        } else {
            double e = l.period * (1 - (capacity - l.cost - current) / prev);
            retry = (start - now) + e;
        }
    }

    return result(0, std::max(0.0, std::floor(capacity - estimate + epsilon)),
                  reset, std::max(1.0, std::ceil(retry - slack)));
}

// lua/token_bucket.lua
rrl_limit_result_t token_bucket(const Args& l, double now,
                                const rrl_local_state_t& state,
                                rrl_local_state_t* next) {
    constexpr double slack = 1e-3;

    double capacity = l.burst;
    double tokens = capacity;

    if (state.a != 0) {
        double at = static_cast<double>(state.a);
        tokens = std::min(
            capacity, state.c + std::max(0.0, now - at) * l.limit / l.period);
    }

    auto wait = [&](double n) {
        return std::max(0.0,
                        std::ceil((n - tokens) * l.period / l.limit - slack));
    };
    double per_slack = slack * l.limit / l.period;

    if (l.cost <= capacity && wait(l.cost) == 0) {
        double left = std::max(0.0, tokens - l.cost);
        tokens = left;
        double full_in = wait(capacity);
        *next = {reply_int(now), 0, left};
        return result(1,
                      std::min(capacity - l.cost, std::floor(left + per_slack)),
                      full_in, 0);
    }

    double retry = l.period;
    if (l.cost <= capacity) retry = wait(l.cost);

    return result(0, std::min(capacity, std::floor(tokens + per_slack)),
                  wait(capacity), std::max(1.0, retry));
}

// The TAT as the script stores it: "<now + whole>[.<9 decimals>]", read
// back as two numbers. Returns false if the fraction cannot be formatted.
bool leaky_bucket_store(double now, double ahead, rrl_local_state_t* next) {
    double whole = std::floor(ahead);
    double frac = 0;
    char buf[64];

    auto f = std::to_chars(buf, buf + sizeof(buf), ahead - whole,
                           std::chars_format::fixed, 9);
    if (f.ec != std::errc()) return false;
    std::string_view text(buf, static_cast<std::size_t>(f.ptr - buf));

    if (text == "1.000000000") {
        whole = whole + 1;  // rounded up
    } else if (text != "0.000000000") {
        auto p = std::from_chars(text.data(), text.data() + text.size(), frac);
        if (p.ec != std::errc()) return false;
    }

    *next = {reply_int(now + whole), 0, frac};
    return true;
}

// lua/leaky_bucket.lua
bool leaky_bucket(const Args& l, double now, const rrl_local_state_t& state,
                  rrl_local_state_t* next, rrl_limit_result_t* out) {
    constexpr double epsilon = 1e-3;

    double interval = l.period / l.limit;
    double horizon = (l.burst + 1) * interval;
    double ahead = 0;

    double i = static_cast<double>(state.a);
    if ((i - now) + state.c > 0) ahead = (i - now) + state.c;

    double new_ahead = ahead + l.cost * interval;
    double allowed_in = new_ahead - horizon;

    if (allowed_in <= epsilon) {
        double remaining =
            std::min(l.burst + 1 - l.cost,
                     std::floor((horizon - new_ahead + epsilon) / interval));
        *out = result(1, std::max(0.0, remaining),
                      std::ceil(new_ahead - epsilon), 0);
        return leaky_bucket_store(now, new_ahead, next);
    }

    double remaining = std::min(
        l.burst + 1, std::floor((horizon - ahead + epsilon) / interval));
    double retry = l.period;
    if (l.cost <= l.burst + 1) retry = std::ceil(allowed_in - epsilon);

    *out =
        result(0, std::max(0.0, remaining),
               std::max(0.0, std::ceil(ahead - epsilon)), std::max(1.0, retry));
    return true;
}

}  // namespace

bool local_check(const LocalLimit& limit, std::int64_t now_us,
                 const rrl_local_state_t& state, rrl_local_state_t* next,
                 rrl_limit_result_t* out) {
    if (limit.limit == 0 || limit.period_ms == 0) return false;

    const Args l{static_cast<double>(limit.limit),
                 static_cast<double>(limit.period_ms) * 1000,
                 static_cast<double>(limit.burst),
                 static_cast<double>(limit.cost)};
    const double now = static_cast<double>(now_us);

    // a rejection keeps the state
    *next = state;

    switch (limit.algorithm) {
        case RRL_FIXED_WINDOW:
            *out = fixed_window(l, now, state, next);
            return true;
        case RRL_SLIDING_LOG:  // a log does not fit: see local_algorithms.hpp
        case RRL_SLIDING_WINDOW:
            *out = sliding_window(l, now, state, next);
            return true;
        case RRL_TOKEN_BUCKET:
            *out = token_bucket(l, now, state, next);
            return true;
        case RRL_LEAKY_BUCKET:
            return leaky_bucket(l, now, state, next, out);
        default:
            return false;
    }
}

}  // namespace rrl
