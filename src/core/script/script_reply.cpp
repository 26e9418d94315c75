#include "script/script_reply.hpp"

#include <algorithm>

#include "base/log.hpp"

namespace rrl {

namespace {

constexpr std::int64_t us_per_s = 1000000;

// No zone keeps state longer (zones that would are refused): a longer
// duration is not one the script computes.
constexpr std::int64_t max_duration_us =
    static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;

// The script computes in doubles: a time beyond 2^53 us (the year 2255) is
// not one it sent, and would overflow the arithmetic here.
constexpr std::int64_t max_time_us = std::int64_t{1} << 53;

bool is_flag(std::int64_t v) { return v == 0 || v == 1; }

bool is_duration(std::int64_t v) { return v >= 0 && v <= max_duration_us; }

// The limit the headers describe: the lowest remaining among the limits
// that decided (all of them on a pass, the rejecting ones on a reject);
// on a tie, the one that takes longest to recover.
std::size_t reported_limit(const rrl_limit_result_t* limits, std::size_t n,
                           bool passed, const bool* hidden) {
    std::size_t best = n;
    for (std::size_t i = 0; i < n; i++) {
        const rrl_limit_result_t& l = limits[i];
        if (!passed && l.passed) continue;
        if (hidden != nullptr && hidden[i]) continue;
        if (best == n) {
            best = i;
            continue;
        }
        const rrl_limit_result_t& b = limits[best];
        std::int64_t l_wait = passed ? l.reset_after_us : l.retry_after_us;
        std::int64_t b_wait = passed ? b.reset_after_us : b.retry_after_us;
        if (l.remaining < b.remaining ||
            (l.remaining == b.remaining && l_wait > b_wait)) {
            best = i;
        }
    }
    return best == n ? 0 : best;
}

}  // namespace

std::int64_t seconds_up(std::int64_t us) {
    // no us + us_per_s - 1: it overflows near INT64_MAX
    return us / us_per_s + (us > 0 && us % us_per_s != 0 ? 1 : 0);
}

std::int64_t retry_after_seconds(std::int64_t retry_after_us) {
    std::int64_t s = seconds_up(retry_after_us);
    return s < 1 ? 1 : s;
}

bool is_noscript(std::string_view error_reply) {
    return error_reply.substr(0, 9) == "NOSCRIPT " ||
           error_reply == "NOSCRIPT";
}

std::optional<Decoded> decode_reply(const std::int64_t* values, std::size_t n,
                                    std::size_t nlimits, std::string* error,
                                    const bool* hidden) {
    auto fail = [error](std::string why) -> std::optional<Decoded> {
        if (error != nullptr) *error = std::move(why);
        return std::nullopt;
    };

    if (nlimits == 0) return fail("no limits");
    if (n != RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * nlimits) {
        return fail("reply has " + std::to_string(n) + " elements, expected " +
                    std::to_string(RRL_REPLY_HEADER +
                                   RRL_REPLY_PER_LIMIT * nlimits));
    }

    std::int64_t passed = values[0];
    std::int64_t now_us = values[1];
    if (!is_flag(passed)) return fail("bad decision " + std::to_string(passed));
    if (now_us <= 0 || now_us > max_time_us) {
        return fail("bad time " + std::to_string(now_us));
    }

    Decoded d{};
    d.limits.reserve(nlimits);
    bool all_passed = true;

    for (std::size_t i = 0; i < nlimits; i++) {
        const std::int64_t* v = values + RRL_REPLY_HEADER +
                                RRL_REPLY_PER_LIMIT * i;
        rrl_limit_result_t l{static_cast<int>(v[0]), v[1], v[2], v[3]};
        if (!is_flag(v[0]) || l.remaining < 0 ||
            !is_duration(l.reset_after_us) ||
            !is_duration(l.retry_after_us) ||
            (l.passed && l.retry_after_us != 0) ||
            (!l.passed && l.retry_after_us == 0)) {
            return fail("bad result for limit " + std::to_string(i + 1));
        }
        all_passed = all_passed && l.passed;
        d.limits.push_back(l);
    }

    if (all_passed != (passed == 1)) return fail("inconsistent decision");

    d.decision = decide_results(d.limits.data(), nlimits, now_us, hidden);
    return d;
}

bool decode_reply_into(const std::int64_t* values, std::size_t n,
                       std::size_t nlimits, rrl_limit_result_t* results,
                       rrl_decision_t* decision) {
    std::string error;
    auto d = decode_reply(values, n, nlimits, &error);
    if (!d) {
        log(LogLevel::error, "unexpected script reply: " + error);
        return false;
    }
    std::copy(d->limits.begin(), d->limits.end(), results);
    *decision = d->decision;
    return true;
}

rrl_decision_t decide_results(const rrl_limit_result_t* results,
                              std::size_t n, std::int64_t now_us,
                              const bool* hidden) {
    rrl_decision_t decision{};
    if (n == 0) return decision;

    bool all_passed = true;
    for (std::size_t i = 0; i < n; i++) {
        all_passed = all_passed && results[i].passed;
    }

    decision.passed = all_passed ? 1 : 0;
    decision.now_us = now_us;
    decision.reported = reported_limit(results, n, all_passed, hidden);

    const rrl_limit_result_t& shown = results[decision.reported];
    decision.remaining = shown.remaining;
    decision.reset_unix = seconds_up(now_us + shown.reset_after_us);
    decision.retry_after = 0;
    // a rejected limit's reset is when it would pass: the same rounding
    // as Retry-After, which takes the longest wait, so never earlier
    decision.reset_after = seconds_up(all_passed ? shown.reset_after_us
                                                 : shown.retry_after_us);

    if (!all_passed) {
        std::int64_t wait = 0;
        for (std::size_t i = 0; i < n; i++) {
            const rrl_limit_result_t& l = results[i];
            if (!l.passed && l.retry_after_us > wait) wait = l.retry_after_us;
        }
        decision.retry_after = retry_after_seconds(wait);
    }

    return decision;
}

}  // namespace rrl
