// The draft RateLimit and RateLimit-Policy values, the problem+json body of
// a rejection, and the reset "t" against Retry-After.
#include "decide/fields.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/wrap/capi.hpp"
#include "decide/problem.hpp"
#include "script/algorithm.hpp"
#include "tests/support/call_limit.hpp"

namespace {

constexpr std::int64_t kSecond = 1000000;
constexpr std::int64_t kNow = 1700000000 * kSecond + 250000;

rrl_policy_t policy(const std::string& zone, int algorithm, std::uint64_t limit,
                    std::uint64_t period_ms,
                    std::uint64_t burst = RRL_BURST_UNSET) {
    return {zone.data(),
            zone.size(),
            algorithm,
            limit,
            period_ms,
            rrl::effective_burst(*rrl::algorithm(algorithm), limit, burst)};
}

std::string policy_field(const std::vector<rrl_policy_t>& p) {
    return rrl::ratelimit_policy(p.data(), p.size()).value_or("");
}

// Decodes a script reply and formats RateLimit for its reported limit.
struct Shown {
    rrl_decision_t decision;
    std::string field;
};

Shown shown(const std::vector<std::string>& zones,
            const std::vector<std::vector<std::int64_t>>& limits) {
    std::vector<std::int64_t> v = {1, kNow};
    for (const auto& l : limits) {
        v.insert(v.end(), l.begin(), l.end());
        if (l[0] == 0) v[0] = 0;
    }
    std::vector<rrl_limit_result_t> results(limits.size());
    Shown s{};
    EXPECT_EQ(rrl_test::reply_decode(v.data(), v.size(), limits.size(),
                                     results.data(), &s.decision),
              RRL_OK);
    const std::string& z = zones[s.decision.reported];
    s.field = rrl::ratelimit(z, s.decision.remaining, s.decision.reset_after)
                  .value_or("");
    return s;
}

TEST(Fields, SfStringEscapesQuoteAndBackslash) {
    EXPECT_EQ(*rrl::sf_string("default"), "\"default\"");
    EXPECT_EQ(*rrl::sf_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(*rrl::sf_string(""), "\"\"");
    EXPECT_FALSE(rrl::sf_string("tab\there"));
    EXPECT_FALSE(rrl::sf_string("\x80"));
}

TEST(Fields, PolicyOfTheDraftExample) {
    EXPECT_EQ(policy_field({policy("default", RRL_FIXED_WINDOW, 100, 10000)}),
              "\"default\";q=100;w=10");
}

TEST(Fields, PolicyOfEveryAlgorithm) {
    std::string z = "z";
    // windows: N + burst per window, exact
    EXPECT_EQ(policy_field({policy(z, RRL_FIXED_WINDOW, 3, 3600000, 2)}),
              "\"z\";q=5;w=3600");
    EXPECT_EQ(policy_field({policy(z, RRL_SLIDING_LOG, 2, 10000, 1)}),
              "\"z\";q=3;w=10");
    EXPECT_EQ(policy_field({policy(z, RRL_SLIDING_WINDOW, 10, 1000)}),
              "\"z\";q=10;w=1");
    // buckets: N per PERIOD, the burst as a vendor parameter
    EXPECT_EQ(policy_field({policy(z, RRL_TOKEN_BUCKET, 10, 60000)}),
              "\"z\";q=10;w=60;rrl-burst=10");
    EXPECT_EQ(policy_field({policy(z, RRL_TOKEN_BUCKET, 10, 60000, 25)}),
              "\"z\";q=10;w=60;rrl-burst=25");
    EXPECT_EQ(policy_field({policy(z, RRL_LEAKY_BUCKET, 5, 1000)}),
              "\"z\";q=5;w=1;rrl-burst=0");
    EXPECT_EQ(policy_field({policy(z, RRL_LEAKY_BUCKET, 5, 1000, 4)}),
              "\"z\";q=5;w=1;rrl-burst=4");
}

TEST(Fields, PolicyWindowRoundedUpToWholeSeconds) {
    std::string z = "z";
    EXPECT_EQ(policy_field({policy(z, RRL_FIXED_WINDOW, 5, 500)}),
              "\"z\";q=5;w=1");
    EXPECT_EQ(policy_field({policy(z, RRL_FIXED_WINDOW, 5, 1500)}),
              "\"z\";q=5;w=2");
    EXPECT_EQ(policy_field({policy(z, RRL_FIXED_WINDOW, 5, 86400000)}),
              "\"z\";q=5;w=86400");
}

TEST(Fields, PolicyListsEveryLimitInOrder) {
    std::string a = "per_ip", b = "key\"hour", c = "glo\\bal";
    EXPECT_EQ(policy_field({policy(a, RRL_SLIDING_WINDOW, 20, 1000),
                            policy(b, RRL_FIXED_WINDOW, 5000, 3600000),
                            policy(c, RRL_LEAKY_BUCKET, 10, 1000, 5)}),
              "\"per_ip\";q=20;w=1, \"key\\\"hour\";q=5000;w=3600, "
              "\"glo\\\\bal\";q=10;w=1;rrl-burst=5");
}

TEST(Fields, UnprintableZoneIsRefused) {
    std::string z = "a b\x01";
    rrl_policy_t p = policy(z, RRL_FIXED_WINDOW, 1, 1000);
    EXPECT_FALSE(rrl::ratelimit_policy(&p, 1));
    rrl_decision_t d{};
    EXPECT_FALSE(rrl::ratelimit(z, d.remaining, d.reset_after));
}

TEST(Fields, TooSmallBufferIsNotWritten) {
    std::string z = "zone";
    rrl_policy_t p = policy(z, RRL_FIXED_WINDOW, 1, 1000);
    char buf[8] = "xxxxxxx";
    EXPECT_EQ(rrl::capi::put(*rrl::ratelimit_policy(&p, 1), buf, sizeof(buf)),
              std::string("\"zone\";q=1;w=1").size());
    EXPECT_EQ(std::string(buf), "xxxxxxx");
}

TEST(Fields, RateLimitOfOnePassedLimit) {
    // 50 left, usage back to zero in 29.5 s: t rounded up
    Shown s = shown({"default"}, {{1, 50, 29500000, 0}});
    EXPECT_EQ(s.field, "\"default\";r=50;t=30");
    EXPECT_EQ(s.decision.reset_after, 30);
    EXPECT_EQ(s.decision.retry_after, 0);
}

TEST(Fields, RateLimitWholeSecondsAreNotRoundedFurther) {
    Shown s = shown({"z"}, {{1, 0, 10000000, 0}});
    EXPECT_EQ(s.field, "\"z\";r=0;t=10");
}

TEST(Fields, RateLimitShowsTheLimitClosestToExhaustion) {
    Shown s = shown(
        {"second", "hour", "day"},
        {{1, 9, 1000000, 0}, {1, 2, 3599000000, 0}, {1, 40, 86400000000, 0}});
    EXPECT_EQ(s.decision.reported, 1u);
    EXPECT_EQ(s.field, "\"hour\";r=2;t=3599");
}

TEST(Fields, RateLimitTieGoesToTheLongestReset) {
    Shown s = shown({"a", "b"}, {{1, 3, 1000000, 0}, {1, 3, 5000000, 0}});
    EXPECT_EQ(s.field, "\"b\";r=3;t=5");
}

TEST(Fields, RejectedTIsWhenItWouldPassAndRetryAfterIsNotEarlier) {
    // usage back to zero in 9.2 s, but a retry passes in 1.2 s
    Shown s = shown({"z"}, {{0, 0, 9200000, 1200000}});
    EXPECT_EQ(s.field, "\"z\";r=0;t=2");
    EXPECT_EQ(s.decision.retry_after, 2);
    EXPECT_GE(s.decision.retry_after, s.decision.reset_after);
}

TEST(Fields, RejectedByTwoRetryAfterCoversTheShownOne) {
    // both rejected: shown is the lower remaining; Retry-After is the
    // longest wait of the two
    Shown s = shown({"cheap", "costly"},
                    {{0, 1, 2000000, 300000}, {0, 0, 4000000, 2100000}});
    EXPECT_EQ(s.field, "\"costly\";r=0;t=3");
    EXPECT_EQ(s.decision.retry_after, 3);

    s = shown({"a", "b"}, {{0, 0, 2000000, 4500000}, {0, 2, 9000000, 800000}});
    EXPECT_EQ(s.field, "\"a\";r=0;t=5");
    EXPECT_EQ(s.decision.retry_after, 5);
}

TEST(Fields, RejectedWithAPassedLimitShowsTheRejectingOne) {
    // a cost of 3 with 2 left: rejected, although the other has fewer left
    Shown s = shown({"per_second", "per_hour"},
                    {{0, 2, 1000000, 400000}, {1, 1, 3600000000, 0}});
    EXPECT_EQ(s.field, "\"per_second\";r=2;t=1");
    EXPECT_EQ(s.decision.retry_after, 1);
}

TEST(Fields, RejectedSubSecondWaitIsOneSecond) {
    Shown s = shown({"z"}, {{0, 0, 1000, 1}});
    EXPECT_EQ(s.field, "\"z\";r=0;t=1");
    EXPECT_EQ(s.decision.retry_after, 1);
}

TEST(Problem, JsonStringEscapes) {
    EXPECT_EQ(rrl::json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(rrl::json_string("\x01\n"), "\"\\u0001\\u000a\"");
}

TEST(Problem, BodyNamesTheRejectingZones) {
    std::string a = "per_ip", b = "key\"hour", c = "global";
    std::vector<rrl_policy_t> p = {policy(a, RRL_FIXED_WINDOW, 1, 1000),
                                   policy(b, RRL_FIXED_WINDOW, 1, 1000),
                                   policy(c, RRL_TOKEN_BUCKET, 1, 1000)};
    std::vector<rrl_limit_result_t> r = {
        {0, 0, 1, 1}, {1, 3, 1, 0}, {0, 0, 1, 1}};
    // the zones of the limits that rejected, as shown_problem() picks them
    std::vector<std::string_view> zones;
    for (size_t i = 0; i < r.size(); i++) {
        if (!r[i].passed) zones.emplace_back(p[i].zone, p[i].zone_len);
    }
    EXPECT_EQ(rrl::problem_json(429, zones),
              "{\"type\":\"https://iana.org/assignments/http-problem-types"
              "#quota-exceeded\",\"title\":\"Request cannot be satisfied as "
              "assigned quota has been exceeded\",\"status\":429,"
              "\"violated-policies\":[\"per_ip\",\"global\"]}\n");
}

TEST(Problem, BodyCarriesTheConfiguredStatus) {
    EXPECT_NE(rrl::problem_json(503, {"k\\z"})
                  .find("\"status\":503,\"violated-policies\":[\"k\\\\z\"]}"),
              std::string::npos);
}

}  // namespace
