// Live overrides in the core: the call's arguments (the algorithm named
// with RRL_OVERRIDES_SUFFIX), the reply's width, its decoding (the applied
// limit written into the request's limits, an unlimited one never
// reported), what a request shows, the invalid override's log line, a
// call's parts merged at their widths, and the metrics.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/rrl.h"
#include "api/rrl_decision.h"
#include "api/rrl_deny_cache.h"
#include "api/rrl_metrics_count.h"
#include "api/rrl_shown.h"
#include "engine/call_plan.hpp"
#include "metrics/metrics.hpp"
#include "script/call_args.hpp"
#include "script/sha1.hpp"
#include "tests/support/call_limit.hpp"
#include "tests/support/test_call.hpp"

namespace {

using Values = std::vector<std::int64_t>;

constexpr std::int64_t kNow = std::int64_t{1700000000} * 1000000;

rrl_call_limit_t limit(const char* zone, int algorithm, std::uint64_t n,
                       std::uint64_t period_ms, std::uint64_t burst,
                       bool overrides, const char* key = "k") {
    rrl_call_limit_t l =
        rrl_test::call_limit(zone, algorithm, n, period_ms, burst);
    rrl_test::set_key(l, key);
    l.overrides = overrides ? 1 : 0;
    return l;
}

std::vector<std::string> call_args(const std::vector<rrl_call_limit_t>& l) {
    return rrl_test::call_args_of(l, std::string(40, 'a'));
}

TEST(OverridesArgs, TheAlgorithmNamesTheFlagAndNothingElseChanges) {
    std::vector<rrl_call_limit_t> l = {
        limit("a", RRL_FIXED_WINDOW, 5, 1000, 0, false),
        limit("b", RRL_TOKEN_BUCKET, 5, 1000, 5, true)};
    std::vector<std::string> args = call_args(l);
    EXPECT_EQ(args[RRL_CALL_ARG(2, 0, RRL_CALL_ALGORITHM)], "fixed_window");
    EXPECT_EQ(args[RRL_CALL_ARG(2, 1, RRL_CALL_ALGORITHM)],
              "token_bucket+overrides");
    EXPECT_EQ(args[RRL_CALL_KEY(1)], "rrl:{b:k}:tb");
    EXPECT_EQ(args.size(), size_t{RRL_CALL_ARGC(2)});

    EXPECT_EQ(rrl_test::reply_values(l.data(), 1), 6u);
    EXPECT_EQ(rrl_test::reply_values(l.data(), 2), 14u);
    EXPECT_EQ(rrl_test::reply_values(l.data() + 1, 1), 10u);
}

struct Decoded {
    int rc;
    std::vector<rrl_limit_result_t> results;
    rrl_decision_t decision{};
};

Decoded decode(const Values& v, std::vector<rrl_call_limit_t>& l) {
    Decoded d{RRL_ERROR, std::vector<rrl_limit_result_t>(l.size()), {}};
    d.rc = rrl_test::call_reply_decode(v.data(), v.size(), l.data(), l.size(),
                                       d.results.data(), &d.decision);
    return d;
}

TEST(OverridesDecode, ARateIsWrittenIntoTheLimit) {
    std::vector<rrl_call_limit_t> l = {
        limit("o", RRL_FIXED_WINDOW, 100, 60000, 0, true)};
    Decoded d =
        decode({1, kNow, 1, 3, 5000, 0, RRL_OVERRIDE_RATE, 2, 10000, 2}, l);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.results[0].remaining, 3);
    EXPECT_EQ(l[0].override, RRL_OVERRIDE_RATE);
    EXPECT_EQ(l[0].limit, 2u);
    EXPECT_EQ(l[0].period_ms, 10000u);
    EXPECT_EQ(l[0].burst, 2u);
}

TEST(OverridesDecode, NoneAndInvalidKeepTheZonesLimit) {
    for (int kind : {RRL_OVERRIDE_NONE, RRL_OVERRIDE_INVALID}) {
        std::vector<rrl_call_limit_t> l = {
            limit("o", RRL_FIXED_WINDOW, 100, 60000, 0, true)};
        Decoded d = decode({1, kNow, 1, 99, 5000, 0, kind, 100, 60000, 0}, l);
        ASSERT_EQ(d.rc, RRL_OK);
        EXPECT_EQ(l[0].override, kind);
        EXPECT_EQ(l[0].limit, 100u);
        EXPECT_EQ(l[0].period_ms, 60000u);
    }
}

TEST(OverridesDecode, RemainingIsCheckedAgainstTheAppliedLimit) {
    std::vector<rrl_call_limit_t> l = {
        limit("o", RRL_FIXED_WINDOW, 100, 60000, 0, true)};
    // 3 left of an override of 2: no reply of the script's
    EXPECT_EQ(
        decode({1, kNow, 1, 3, 5000, 0, RRL_OVERRIDE_RATE, 2, 10000, 0}, l).rc,
        RRL_ERROR);
    EXPECT_EQ(l[0].override, RRL_OVERRIDE_NONE);  // left as it was
    EXPECT_EQ(l[0].limit, 100u);
}

TEST(OverridesDecode, BadOverridesAreRefused) {
    const Values bad[] = {
        {1, kNow, 1, 1, 5000, 0, 5, 100, 60000, 0},  // no such kind
        {1, kNow, 1, 1, 5000, 0, -1, 100, 60000, 0},
        {1, kNow, 1, 1, 5000, 0, RRL_OVERRIDE_RATE, 0, 1000, 0},  // N 0
        {1, kNow, 1, 1, 5000, 0, RRL_OVERRIDE_RATE, 2, 0, 0},     // period 0
        {1, kNow, 1, 1, 5000, 0, RRL_OVERRIDE_RATE, 2, -5, 0},
        // a block that passed, or with a limit
        {1, kNow, 1, 0, 0, 0, RRL_OVERRIDE_BLOCK, 0, 60000, 0},
        {0, kNow, 0, 0, 5000, 5000, RRL_OVERRIDE_BLOCK, 1, 60000, 0},
        // unlimited and rejected
        {0, kNow, 0, 0, 5000, 5000, RRL_OVERRIDE_UNLIMITED, 100, 60000, 0},
    };
    for (const Values& v : bad) {
        std::vector<rrl_call_limit_t> l = {
            limit("o", RRL_FIXED_WINDOW, 100, 60000, 0, true)};
        EXPECT_EQ(decode(v, l).rc, RRL_ERROR) << v[6] << " " << v[7];
    }
    // a sliding_log rate over its capacity
    std::vector<rrl_call_limit_t> l = {
        limit("o", RRL_SLIDING_LOG, 100, 60000, 0, true)};
    EXPECT_EQ(
        decode({1, kNow, 1, 1, 5000, 0, RRL_OVERRIDE_RATE, 10001, 1000, 0}, l)
            .rc,
        RRL_ERROR);
}

TEST(OverridesDecode, BlockShowsNoLimit) {
    std::vector<rrl_call_limit_t> l = {
        limit("o", RRL_LEAKY_BUCKET, 5, 60000, 3, true)};
    Decoded d = decode(
        {0, kNow, 0, 0, 7000000, 7000000, RRL_OVERRIDE_BLOCK, 0, 60000, 0}, l);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.retry_after, 7);
    EXPECT_EQ(l[0].override, RRL_OVERRIDE_BLOCK);
    EXPECT_EQ(l[0].limit, 0u);
    EXPECT_EQ(l[0].burst, 0u);
    EXPECT_EQ(l[0].period_ms, 60000u);

    rrl_shown_t shown{RRL_STATUS_REJECTED,
                      1,
                      &d.decision,
                      d.results.data(),
                      l.data(),
                      1,
                      RRL_SHOW_LEGACY | RRL_SHOW_DRAFT | RRL_SHOW_RETRY_AFTER,
                      1,
                      0,
                      0};
    rrl_field_t f[RRL_SHOWN_FIELDS];
    size_t n = 0;
    char buf[512];
    ASSERT_GT(rrl_shown_fields(buf, sizeof(buf), &shown, f, &n), 0u);
    std::vector<std::string> got;
    for (size_t i = 0; i < n; i++) {
        got.push_back(std::string(f[i].name, f[i].name_len) + ": " +
                      std::string(f[i].value, f[i].value_len));
    }
    EXPECT_EQ(got, (std::vector<std::string>{
                       "X-RateLimit-Limit: 0", "X-RateLimit-Remaining: 0",
                       "X-RateLimit-Reset: 1700000007",
                       "RateLimit-Policy: \"o\";q=0;w=60;rrl-burst=0",
                       "RateLimit: \"o\";r=0;t=7", "Retry-After: 7"}));
}

std::vector<std::string> fields_of(const rrl_shown_t& shown) {
    rrl_field_t f[RRL_SHOWN_FIELDS];
    size_t n = 0;
    char buf[512];
    size_t len = rrl_shown_fields(buf, sizeof(buf), &shown, f, &n);
    std::vector<std::string> out;
    if (len == 0) return out;
    for (size_t i = 0; i < n; i++) {
        out.push_back(std::string(f[i].name, f[i].name_len) + ": " +
                      std::string(f[i].value, f[i].value_len));
    }
    return out;
}

std::string variable(int var, const rrl_shown_t& shown) {
    char buf[64];
    size_t len = rrl_shown_variable(buf, sizeof(buf), var, &shown);
    return len == 0 ? "(none)" : std::string(buf, len);
}

// An unlimited limit is not reported, nor in the policy; alone, nothing
// is shown.
TEST(OverridesDecode, UnlimitedIsNotShown) {
    std::vector<rrl_call_limit_t> l = {
        limit("u", RRL_FIXED_WINDOW, 5, 60000, 0, true),
        limit("p", RRL_FIXED_WINDOW, 5, 60000, 0, false)};
    Decoded d = decode({1, kNow, 1, 0, 0, 0, RRL_OVERRIDE_UNLIMITED, 5, 60000,
                        0, 1, 3, 9000000, 0},
                       l);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.reported, 1u);  // though its remaining is higher
    EXPECT_EQ(d.decision.remaining, 3);
    unsigned show = RRL_SHOW_LEGACY | RRL_SHOW_DRAFT;
    rrl_shown_t shown{RRL_STATUS_PASSED,
                      1,
                      &d.decision,
                      d.results.data(),
                      l.data(),
                      2,
                      show,
                      1,
                      0,
                      0};
    EXPECT_EQ(
        fields_of(shown),
        (std::vector<std::string>{
            "X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 3",
            "X-RateLimit-Reset: 1700000009", "RateLimit-Policy: \"p\";q=5;w=60",
            "RateLimit: \"p\";r=3;t=9"}));
    EXPECT_EQ(variable(RRL_VAR_ZONE, shown), "p");

    // alone: passed, nothing shown
    std::vector<rrl_call_limit_t> one = {
        limit("u", RRL_FIXED_WINDOW, 5, 60000, 0, true)};
    Decoded alone =
        decode({1, kNow, 1, 0, 0, 0, RRL_OVERRIDE_UNLIMITED, 5, 60000, 0}, one);
    ASSERT_EQ(alone.rc, RRL_OK);
    EXPECT_EQ(alone.decision.passed, 1);
    rrl_shown_t none{RRL_STATUS_PASSED,
                     1,
                     &alone.decision,
                     alone.results.data(),
                     one.data(),
                     1,
                     show,
                     1,
                     0,
                     0};
    EXPECT_EQ(fields_of(none), std::vector<std::string>{});
    EXPECT_EQ(variable(RRL_VAR_REMAINING, none), "(none)");
    EXPECT_EQ(variable(RRL_VAR_RESET, none), "(none)");
    EXPECT_EQ(variable(RRL_VAR_ZONE, none), "(none)");
    EXPECT_EQ(variable(RRL_VAR_STATUS, none), "PASSED");
}

// The deny cache and the local zone answer 4 integers a limit: decoded as
// before, the limits left as they are.
TEST(OverridesDecode, NarrowRepliesStillDecode) {
    std::vector<rrl_call_limit_t> l = {
        limit("o", RRL_FIXED_WINDOW, 5, 60000, 0, true),
        limit("p", RRL_FIXED_WINDOW, 5, 60000, 0, false)};
    Decoded d = decode({0, kNow, 0, 0, 1000, 1000, 1, 4, 1000, 0}, l);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(l[0].override, RRL_OVERRIDE_NONE);
    EXPECT_EQ(l[0].limit, 5u);
    // a batch's failed request (-1 throughout) is refused
    Values failed(rrl_test::reply_values(l.data(), 2), -1);
    EXPECT_EQ(decode(failed, l).rc, RRL_ERROR);
}

TEST(OverridesKey, TheStatesHashTagAndLimit) {
    rrl::CallLimit l{
        "api", rrl::algorithm(RRL_SLIDING_WINDOW), 5, 1000, 0, 1, "customer-42",
        true};
    EXPECT_EQ(rrl::override_key(l), "rrl:{api:customer-42}:limit");

    std::string long_key(200, 'x');
    l.key = long_key;
    EXPECT_EQ(rrl::override_key(l),
              "rrl:{api:#" + rrl::sha1_hex(long_key) + "}:limit");
    l.key = "#x";
    EXPECT_EQ(rrl::override_key(l),
              "rrl:{api:#" + rrl::sha1_hex("#x") + "}:limit");
    // a brace in the key: up to the last, as the script's pattern
    l.key = "a}b";
    EXPECT_EQ(rrl::override_key(l), "rrl:{api:a}b}:limit");
}

TEST(OverridesLog, TheInvalidOverridesLine) {
    rrl_call_limit_t l =
        limit("api", RRL_FIXED_WINDOW, 5, 1000, 0, true, "a\"b\x01");
    l.override = RRL_OVERRIDE_INVALID;
    char buf[512];
    size_t n = rrl_test::override_message(buf, sizeof(buf), &l, 1);
    EXPECT_EQ(std::string(buf, n),
              "redis_ratelimit: invalid override of zone \"api\", key "
              "\"a\\x22b\\x01\" in \"rrl:{api:a\\x22b\\x01}:limit\", the "
              "zone's rate applies");
    EXPECT_EQ(rrl_test::override_message(nullptr, 0, &l, 1), n);
    // as put() writes: nothing when it does not fit
    char small[8] = "unset";
    EXPECT_EQ(rrl_test::override_message(small, sizeof(small), &l, 1), n);
    EXPECT_STREQ(small, "unset");
}

// Of a request's limits, the first invalid override is the one logged.
TEST(OverridesLog, TheFirstInvalidOverride) {
    std::vector<rrl_call_limit_t> l = {
        limit("a", RRL_FIXED_WINDOW, 5, 1000, 0, true, "k1"),
        limit("b", RRL_FIXED_WINDOW, 5, 1000, 0, true, "k2"),
        limit("c", RRL_FIXED_WINDOW, 5, 1000, 0, true, "k3")};
    l[0].override = RRL_OVERRIDE_RATE;
    char buf[512];
    EXPECT_EQ(rrl_test::override_message(buf, sizeof(buf), l.data(), l.size()),
              0u);
    l[1].override = RRL_OVERRIDE_INVALID;
    l[2].override = RRL_OVERRIDE_INVALID;
    size_t n = rrl_test::override_message(buf, sizeof(buf), l.data(), l.size());
    EXPECT_NE(std::string(buf, n).find("zone \"b\", key \"k2\""),
              std::string::npos);
    EXPECT_EQ(rrl_test::override_message(buf, sizeof(buf), l.data(), 0), 0u);
}

// A rejection logs the zone's rate as written, or the override applied.
TEST(OverridesLog, TheRateOfARejection) {
    auto logged = [](std::uint64_t n, std::uint64_t period_ms, int override) {
        rrl_call_limit_t l =
            limit("api", RRL_FIXED_WINDOW, n, period_ms, 0, true);
        l.override = override;
        char buf[128];
        size_t len = rrl_rejection_message(buf, sizeof(buf), 0,
                                           RRL_OUTCOME_REPLY, &l, "5r/m", 4, 3);
        EXPECT_EQ(rrl_rejection_message(nullptr, 0, 0, RRL_OUTCOME_REPLY, &l,
                                        "5r/m", 4, 3),
                  len);
        return std::string(buf, len);
    };
    auto line = [](const std::string& rate) {
        return "limiting requests by zone \"api\", key \"k\", rate " + rate +
               ", retry after 3s";
    };
    EXPECT_EQ(logged(5, 60000, RRL_OVERRIDE_NONE), line("5r/m"));
    EXPECT_EQ(logged(5, 60000, RRL_OVERRIDE_INVALID), line("5r/m"));
    EXPECT_EQ(logged(0, 60000, RRL_OVERRIDE_BLOCK), line("block (override)"));
    EXPECT_EQ(logged(2, 10000, RRL_OVERRIDE_RATE), line("2r/10s (override)"));
    EXPECT_EQ(logged(2, 1000, RRL_OVERRIDE_RATE), line("2r/s (override)"));
    EXPECT_EQ(logged(7, 3600000, RRL_OVERRIDE_RATE), line("7r/h (override)"));
    EXPECT_EQ(logged(7, 90500, RRL_OVERRIDE_RATE),
              line("7r/1m30s500ms (override)"));
    EXPECT_EQ(logged(7, 1, RRL_OVERRIDE_RATE), line("7r/1ms (override)"));
    EXPECT_EQ(logged(7, 2 * 86400000, RRL_OVERRIDE_RATE),
              line("7r/2d (override)"));
}

// Cluster parts of limits with and without overrides, merged in the
// request's order at each limit's width.
TEST(OverridesCall, PartsMergeAtTheirWidths) {
    // "{a}x" and "{a}y" share a slot, "{b}x" is in another
    int zone_a, zone_b, zone_c;
    std::vector<rrl_test::PlannedLimit> limits = {
        {"{a}x", &zone_a, RRL_FIXED_WINDOW, 10, 1000, 0, 1},
        {"{b}x", &zone_b, RRL_FIXED_WINDOW, 10, 1000, 0, 1},
        {"{a}y", &zone_c, RRL_TOKEN_BUCKET, 10, 1000, 0, 1}};
    limits[0].overrides = limits[2].overrides = true;
    std::unique_ptr<rrl::Call> call =
        rrl_test::call_of(limits, "", true);
    ASSERT_NE(call, nullptr);
    ASSERT_EQ(call->parts(), 2u);
    ASSERT_EQ(call->values(0), 2u + 8 + 8);
    ASSERT_EQ(call->values(1), 2u + 4);

    Values a = {1,  500, 10, 11, 12, 13, 14, 15, 16,
                17, 30,  31, 32, 33, 34, 35, 36, 37};
    Values b = {1, 501, 20, 21, 22, 23};
    std::copy(a.begin(), a.end(), call->reply(0));
    std::copy(b.begin(), b.end(), call->reply(1));
    Values out(22);
    ASSERT_EQ(call->merge(out.data(), out.size()), 22u);
    EXPECT_EQ(out, (Values{1,  500, 10, 11, 12, 13, 14, 15, 16, 17, 20,
                           21, 22,  23, 30, 31, 32, 33, 34, 35, 36, 37}));
}

// A deny cache entry shows the limit its rejection was decided under: the
// zone's by default, an override's once kept.
TEST(OverridesDeny, AnEntryShowsTheLimitItWasLearnedUnder) {
    rrl_deny_limit_t zone{RRL_LEAKY_BUCKET, 5, 60000, 3, 7, 1};
    rrl_limit_result_t r{0, 0, 9000000, 9000000};
    rrl_deny_entry_t e{};
    ASSERT_EQ(rrl_deny_learn(kNow, kNow + 10, &zone, &r, &e), 1);
    EXPECT_EQ(e.override, RRL_OVERRIDE_NONE);
    EXPECT_EQ(e.shown_limit, 5u);
    EXPECT_EQ(e.shown_period_ms, 60000u);
    EXPECT_EQ(e.shown_burst, 3u);

    rrl_call_limit_t blocked = limit("o", RRL_LEAKY_BUCKET, 0, 60000, 0, true);
    blocked.override = RRL_OVERRIDE_BLOCK;
    rrl_deny_keep_shown(&e, &blocked);

    rrl_call_limit_t next = limit("o", RRL_LEAKY_BUCKET, 5, 60000, 3, true);
    rrl_deny_shown(&e, &next);
    EXPECT_EQ(next.override, RRL_OVERRIDE_BLOCK);
    EXPECT_EQ(next.limit, 0u);
    EXPECT_EQ(next.period_ms, 60000u);
    EXPECT_EQ(next.burst, 0u);
}

// An override counts when Redis found it: not in a deny cache's answer,
// and no override none.
TEST(OverridesMetrics, TheCounterOfAKind) {
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_NONE, 1), -1);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_RATE, 1), 0);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_UNLIMITED, 1), 1);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_BLOCK, 1), 2);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_INVALID, 1), 3);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_BLOCK, 0), -1);
    EXPECT_EQ(rrl_metrics_override_counter(RRL_OVERRIDE_KINDS, 1), -1);
    static_assert(RRL_OVERRIDE_KINDS - 1 == RRL_METRICS_OVERRIDE_KINDS);
}

TEST(OverridesMetrics, KindsOfZonesWithOverridesOnly) {
    rrl_metrics_zone_t zones[2] = {};
    zones[0].name = "plain";
    zones[0].len = 5;
    zones[1].name = "o";
    zones[1].len = 1;
    zones[1].overrides = 1;
    zones[1].override_kinds[0] = 4;
    zones[1].override_kinds[3] = 1;
    rrl_metrics_t m{};
    m.zones = zones;
    m.nzones = 2;
    std::string text = rrl::metrics_format(m);
    EXPECT_NE(text.find("# HELP redis_ratelimit_overrides_total Requests whose "
                        "limit in the zone was an override from Redis, by "
                        "kind.\n# TYPE redis_ratelimit_overrides_total "
                        "counter\n"
                        "redis_ratelimit_overrides_total{zone=\"o\",kind="
                        "\"rate\"} 4\n"
                        "redis_ratelimit_overrides_total{zone=\"o\",kind="
                        "\"unlimited\"} 0\n"
                        "redis_ratelimit_overrides_total{zone=\"o\",kind="
                        "\"block\"} 0\n"
                        "redis_ratelimit_overrides_total{zone=\"o\",kind="
                        "\"invalid\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("zone=\"plain\",kind"), std::string::npos);

    zones[1].overrides = 0;
    EXPECT_EQ(rrl::metrics_format(m).find("overrides_total"),
              std::string::npos);
}

}  // namespace
