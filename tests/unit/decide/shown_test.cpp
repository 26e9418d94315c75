// rrl_shown_*: the header fields, variables and problem+json body of a
// limited request, from its limits and decoded decision.
#include "decide/shown.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/call_limit.hpp"
#include "api/rrl_decision.h"
#include "api/rrl_shown.h"

namespace {

constexpr std::int64_t kSecond = 1000000;
constexpr std::int64_t kNow = 1700000000 * kSecond + 250000;

rrl_call_limit_t limit(const std::string& zone, int algorithm, std::uint64_t n,
                       std::uint64_t period_ms, std::uint64_t burst) {
    return rrl_test::call_limit(zone, algorithm, n, period_ms, burst);
}

// A request of limits, decided by a script reply of {passed, remaining,
// reset_after_us, retry_after_us} per limit.
struct Request {
    std::vector<rrl_call_limit_t> limits;
    std::vector<rrl_limit_result_t> results;
    rrl_decision_t decision{};
    rrl_shown_t shown{};

    Request(std::vector<rrl_call_limit_t> l,
            const std::vector<std::vector<std::int64_t>>& reply, unsigned show)
        : limits(std::move(l)), results(limits.size()) {
        std::vector<std::int64_t> v = {1, kNow};
        for (const auto& r : reply) {
            v.insert(v.end(), r.begin(), r.end());
            if (r[0] == 0) v[0] = 0;
        }
        EXPECT_EQ(rrl_test::reply_decode(v.data(), v.size(), limits.size(),
                                         results.data(), &decision),
                  RRL_OK);
        shown = {RRL_STATUS_PASSED,
                 1,
                 &decision,
                 results.data(),
                 limits.data(),
                 limits.size(),
                 show,
                 1,
                 0,
                 0,
                 0};
    }
};

std::vector<std::string> fields(const rrl_shown_t& shown) {
    rrl_field_t f[RRL_SHOWN_FIELDS];
    size_t n = 0;
    size_t len = rrl_shown_fields(nullptr, 0, &shown, f, &n);
    EXPECT_EQ(n, 0u);
    std::string buf(len, '\0');
    EXPECT_EQ(rrl_shown_fields(buf.data(), len, &shown, f, &n), len);
    std::vector<std::string> out;
    for (size_t i = 0; i < n; i++) {
        out.push_back(std::string(f[i].name, f[i].name_len) + ": " +
                      std::string(f[i].value, f[i].value_len));
    }
    return out;
}

std::string variable(int var, const rrl_shown_t& shown) {
    size_t len = rrl_shown_variable(nullptr, 0, var, &shown);
    std::string out(len, '\0');
    EXPECT_EQ(rrl_shown_variable(out.data(), len, var, &shown), len);
    return out;
}

const std::string a = "per_ip", b = "key_hour";

TEST(Shown, LegacyFieldsOfTheReportedLimit) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 2),
               limit(b, RRL_TOKEN_BUCKET, 5, 60000, 20)},
              {{1, 7, 500000, 0}, {1, 3, 30 * kSecond, 0}}, RRL_SHOW_LEGACY);
    std::vector<std::string> expected = {"X-RateLimit-Limit: 20",
                                         "X-RateLimit-Remaining: 3",
                                         "X-RateLimit-Reset: 1700000031"};
    EXPECT_EQ(fields(r.shown), expected);
}

TEST(Shown, DraftFieldsListEveryLimit) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 2),
               limit(b, RRL_TOKEN_BUCKET, 5, 60000, 20)},
              {{1, 7, 500000, 0}, {1, 3, 30 * kSecond, 0}}, RRL_SHOW_DRAFT);
    std::vector<std::string> expected = {
        "RateLimit-Policy: \"per_ip\";q=12;w=1, "
        "\"key_hour\";q=5;w=60;rrl-burst=20",
        "RateLimit: \"key_hour\";r=3;t=30"};
    EXPECT_EQ(fields(r.shown), expected);
}

TEST(Shown, RejectionShowsEveryFieldAndRetryAfter) {
    Request r({limit(a, RRL_SLIDING_WINDOW, 4, 2000, 0)},
              {{0, 0, 2 * kSecond, 1500000}},
              RRL_SHOW_LEGACY | RRL_SHOW_DRAFT | RRL_SHOW_RETRY_AFTER);
    std::vector<std::string> expected = {
        "X-RateLimit-Limit: 4",          "X-RateLimit-Remaining: 0",
        "X-RateLimit-Reset: 1700000003", "RateLimit-Policy: \"per_ip\";q=4;w=2",
        "RateLimit: \"per_ip\";r=0;t=2", "Retry-After: 2"};
    EXPECT_EQ(fields(r.shown), expected);
}

TEST(Shown, LocalLimitsAreThisServersShare) {
    Request r({limit(a, RRL_TOKEN_BUCKET, 10, 1000, 10)}, {{1, 2, 100000, 0}},
              RRL_SHOW_LEGACY | RRL_SHOW_DRAFT | RRL_SHOW_LOCAL_LIMITS);
    r.shown.local_share = 4;
    std::vector<std::string> expected = {
        "X-RateLimit-Limit: 2", "X-RateLimit-Remaining: 2",
        "X-RateLimit-Reset: 1700000001",
        "RateLimit-Policy: \"per_ip\";q=2;w=1;rrl-burst=2",
        "RateLimit: \"per_ip\";r=2;t=1"};
    EXPECT_EQ(fields(r.shown), expected);
}

TEST(Shown, NoFieldsUndecidedOrNoneShownOrUnprintable) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0)}, {{1, 9, 1000, 0}},
              RRL_SHOW_LEGACY);
    rrl_field_t f[RRL_SHOWN_FIELDS];
    size_t n = 0;
    r.shown.decided = 0;
    EXPECT_EQ(rrl_shown_fields(nullptr, 0, &r.shown, f, &n), 0u);
    r.shown.decided = 1;
    r.shown.show = 0;
    EXPECT_EQ(rrl_shown_fields(nullptr, 0, &r.shown, f, &n), 0u);

    std::string bad = "a\x01";
    r.limits[0] = limit(bad, RRL_FIXED_WINDOW, 10, 1000, 0);
    r.shown.show = RRL_SHOW_LEGACY | RRL_SHOW_DRAFT;
    EXPECT_EQ(rrl_shown_fields(nullptr, 0, &r.shown, f, &n), 0u);
    EXPECT_EQ(n, 0u);
}

TEST(Shown, UnknownAlgorithmHasNoCapacity) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0)}, {{1, 9, 1000, 0}},
              RRL_SHOW_LEGACY);
    r.limits[0].algorithm = 99;
    EXPECT_EQ(fields(r.shown)[0], "X-RateLimit-Limit: 0");
}

TEST(Shown, Variables) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0),
               limit(b, RRL_FIXED_WINDOW, 10, 3600000, 0)},
              {{1, 9, 1000, 0}, {1, 4, 1800 * kSecond, 0}}, RRL_SHOW_LEGACY);
    EXPECT_EQ(variable(RRL_VAR_STATUS, r.shown), "PASSED");
    EXPECT_EQ(variable(RRL_VAR_REMAINING, r.shown), "4");
    EXPECT_EQ(variable(RRL_VAR_RESET, r.shown), "1800");
    EXPECT_EQ(variable(RRL_VAR_ZONE, r.shown), b);
    EXPECT_EQ(variable(RRL_VAR_RTT, r.shown), "");
    EXPECT_EQ(variable(99, r.shown), "");
}

TEST(Shown, VariablesNotFoundUntilDecided) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0)}, {{1, 9, 1000, 0}},
              RRL_SHOW_LEGACY);
    r.shown.decided = 0;
    r.shown.status = RRL_STATUS_FAILED_OPEN;
    EXPECT_EQ(variable(RRL_VAR_STATUS, r.shown), "FAILED_OPEN");
    EXPECT_EQ(variable(RRL_VAR_REMAINING, r.shown), "");
    EXPECT_EQ(variable(RRL_VAR_RESET, r.shown), "");
    EXPECT_EQ(variable(RRL_VAR_ZONE, r.shown), "");
    r.shown.status = 0;
    EXPECT_EQ(variable(RRL_VAR_STATUS, r.shown), "");
}

// $redis_ratelimit_cost: the units the limit shown charged up front; "0"
// when none were; not found when the request was not limited.
TEST(Shown, CostOfTheLimitShownWhenCharged) {
    std::vector<rrl_call_limit_t> l = {limit(a, RRL_FIXED_WINDOW, 10, 1000, 0),
                                       limit(b, RRL_FIXED_WINDOW, 10, 1000, 0)};
    l[0].cost = 2000;
    l[1].cost = 3;
    Request r(l, {{1, 9, 1000, 0}, {1, 4, 1000, 0}}, RRL_SHOW_LEGACY);
    EXPECT_EQ(variable(RRL_VAR_COST, r.shown), "3");  // b: 4 remaining
    for (unsigned s : {RRL_STATUS_DELAYED, RRL_STATUS_DELAYED_DRY_RUN,
                       RRL_STATUS_FAILED_LOCAL}) {
        r.shown.status = s;
        EXPECT_EQ(variable(RRL_VAR_COST, r.shown), "3") << s;
    }
    r.shown.decided = 0;  // failed open, closed: nothing charged
    for (unsigned s : {RRL_STATUS_FAILED_OPEN, RRL_STATUS_FAILED_CLOSED,
                       RRL_STATUS_PASSED}) {
        r.shown.status = s;
        EXPECT_EQ(variable(RRL_VAR_COST, r.shown), "0") << s;
    }
    r.shown.status = 0;
    EXPECT_EQ(variable(RRL_VAR_COST, r.shown), "");

    // every limit unlimited (an override): none shown, nothing charged
    Request u(l, {{1, 9, 1000, 0}, {1, 4, 1000, 0}}, RRL_SHOW_LEGACY);
    u.limits[0].override = RRL_OVERRIDE_UNLIMITED;
    u.limits[1].override = RRL_OVERRIDE_UNLIMITED;
    EXPECT_EQ(variable(RRL_VAR_COST, u.shown), "0");
    EXPECT_EQ(variable(RRL_VAR_REMAINING, u.shown), "");

    // rejected, in a dry run or not, or by the local zone: "0"
    Request no(l, {{1, 9, 1000, 0}, {0, 0, 1000, 500000}}, RRL_SHOW_LEGACY);
    for (unsigned s : {RRL_STATUS_REJECTED, RRL_STATUS_REJECTED_DRY_RUN,
                       RRL_STATUS_FAILED_LOCAL}) {
        no.shown.status = s;
        EXPECT_EQ(variable(RRL_VAR_COST, no.shown), "0") << s;
    }
}

TEST(Shown, RttInMsWithThreeDecimals) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0)}, {{1, 9, 1000, 0}},
              RRL_SHOW_LEGACY);
    r.shown.replied = 1;
    r.shown.rtt_us = 1234;
    EXPECT_EQ(variable(RRL_VAR_RTT, r.shown), "1.234");
    r.shown.rtt_us = 5;
    EXPECT_EQ(variable(RRL_VAR_RTT, r.shown), "0.005");
    r.shown.rtt_us = 120050;
    EXPECT_EQ(variable(RRL_VAR_RTT, r.shown), "120.050");
    r.shown.rtt_us = -3;  // a clock that went back
    EXPECT_EQ(variable(RRL_VAR_RTT, r.shown), "0.000");
}

TEST(Shown, DelayInMsWithThreeDecimalsEmptyWhenNone) {
    Request r({limit(a, RRL_LEAKY_BUCKET, 10, 1000, 5)}, {{1, 2, 400000, 0}},
              RRL_SHOW_LEGACY);
    EXPECT_EQ(variable(RRL_VAR_DELAY, r.shown), "");
    r.shown.delay_us = 300000;
    EXPECT_EQ(variable(RRL_VAR_DELAY, r.shown), "300.000");
    r.shown.delay_us = 99950;
    EXPECT_EQ(variable(RRL_VAR_DELAY, r.shown), "99.950");
    r.shown.delay_us = 7;
    EXPECT_EQ(variable(RRL_VAR_DELAY, r.shown), "0.007");
    r.shown.status = RRL_STATUS_DELAYED;
    EXPECT_EQ(variable(RRL_VAR_STATUS, r.shown), "DELAYED");
}

TEST(Shown, ProblemNamesTheRejectingZones) {
    Request r({limit(a, RRL_FIXED_WINDOW, 10, 1000, 0),
               limit(b, RRL_FIXED_WINDOW, 10, 1000, 0)},
              {{1, 9, 1000, 0}, {0, 0, kSecond, kSecond}}, RRL_SHOW_LEGACY);
    size_t len = rrl_shown_problem(nullptr, 0, 429, &r.shown);
    std::string body(len, '\0');
    EXPECT_EQ(rrl_shown_problem(body.data(), len, 429, &r.shown), len);
    EXPECT_NE(body.find("\"status\":429,\"violated-policies\":[\"key_hour\"]"),
              std::string::npos);
}

TEST(Shown, VariableNamesAreTheModulesByTheirRrlVar) {
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_STATUS),
                 "redis_ratelimit_status");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_REMAINING),
                 "redis_ratelimit_remaining");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_RESET),
                 "redis_ratelimit_reset");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_ZONE), "redis_ratelimit_zone");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_RTT), "redis_ratelimit_rtt");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_DELAY),
                 "redis_ratelimit_delay");
    EXPECT_STREQ(rrl_shown_variable_name(RRL_VAR_COST), "redis_ratelimit_cost");
    EXPECT_EQ(rrl_shown_variable_name(RRL_VAR_COST + 1), nullptr);
    EXPECT_EQ(rrl_shown_variable_name(-1), nullptr);
}

}  // namespace
