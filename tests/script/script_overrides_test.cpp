// Live overrides in the script: a zone with overrides=on (its algorithm
// named with "+overrides") reads "rrl:{ZONE:KEY}:limit" in the same call
// and applies a rate, "unlimited" or "block"; an invalid value leaves the
// zone's limit. The reply of such a limit has 4 more integers: kind, then
// the limit, period (ms) and burst applied. Real script, real redis-server,
// injected time.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "script/algorithm.hpp"
#include "tests/script/script_fixture.hpp"
#include "tests/support/call_limit.hpp"

namespace {

using namespace rrl_test;

using Values = std::vector<std::int64_t>;

constexpr std::int64_t kS = 1000 * kMs;

Limit with_overrides(Limit l) {
    l.algorithm += RRL_OVERRIDES_SUFFIX;
    return l;
}

// "rrl:{z:NAME}:TAG", as the module names a state
std::string state_key(const std::string& name, const std::string& tag) {
    return "rrl:{z:" + name + "}:" + tag;
}

std::string limit_key(const std::string& name) {
    return "rrl:{z:" + name + "}:limit";
}

class OverridesTest : public ScriptFixture {
   protected:
    // the check's reply, whatever its width
    Values check(std::int64_t now, const std::vector<Limit>& limits) {
        std::vector<std::string> keys, argv = {str(now)};
        for (const Limit& l : limits) {
            keys.push_back(l.key);
            argv.insert(argv.end(),
                        {l.algorithm, str(l.limit), str(l.period_ms),
                         str(l.burst), str(l.cost)});
        }
        return integers(evalsha(keys, argv));
    }

    Values batch(std::int64_t now,
                 const std::vector<std::vector<Limit>>& reqs) {
        std::vector<std::string> keys, zones, tail;
        std::vector<std::vector<std::string>> seen;
        for (const auto& req : reqs) {
            tail.push_back(str(static_cast<std::int64_t>(req.size())));
            for (const Limit& l : req) {
                std::vector<std::string> zone = {
                    l.algorithm, str(l.limit), str(l.period_ms), str(l.burst)};
                std::size_t z = 0;
                while (z < seen.size() && seen[z] != zone) z++;
                if (z == seen.size()) seen.push_back(zone);
                keys.push_back(l.key);
                tail.push_back(str(static_cast<std::int64_t>(z + 1)));
                tail.push_back(str(l.cost));
            }
        }
        std::vector<std::string> argv = {
            "batch", str(now), str(static_cast<std::int64_t>(seen.size()))};
        for (const auto& zone : seen) {
            argv.insert(argv.end(), zone.begin(), zone.end());
        }
        argv.insert(argv.end(), tail.begin(), tail.end());
        return integers(evalsha(keys, argv));
    }

    long long exists(const std::string& key) {
        return redis_->integer({"EXISTS", key});
    }
};

TEST_F(OverridesTest, WithoutOverridesNoReadAndTheSameReply) {
    set(limit_key("k"), "block");
    Values v = check(kT, {fw(state_key("k", "fw"), 5, 1000)});
    EXPECT_EQ(v, (Values{1, kT, 1, 4, kS, 0}));
}

TEST_F(OverridesTest, NoOverrideKeyIsTheZonesLimit) {
    Values v = check(kT, {with_overrides(fw(state_key("k", "fw"), 5, 1000))});
    EXPECT_EQ(v, (Values{1, kT, 1, 4, kS, 0, RRL_OVERRIDE_NONE, 5, 1000, 0}));
}

// A rate override decides exactly as a zone of that rate would: the same
// four integers, request after request, as a key of such a zone.
TEST_F(OverridesTest, RateDecidesAsAZoneOfThatRate) {
    struct Case {
        int algorithm;
        const char* value;
        std::int64_t limit, period_ms;
        std::uint64_t burst;  // as given, or unset
    };
    const Case cases[] = {
        {RRL_FIXED_WINDOW, "3r/2s", 3, 2000, RRL_BURST_UNSET},
        {RRL_FIXED_WINDOW, "3r/2s burst=2", 3, 2000, 2},
        {RRL_SLIDING_WINDOW, "4r/s", 4, 1000, RRL_BURST_UNSET},
        {RRL_SLIDING_LOG, "2r/1s500ms burst=1", 2, 1500, 1},
        {RRL_TOKEN_BUCKET, "3r/s", 3, 1000, RRL_BURST_UNSET},
        {RRL_TOKEN_BUCKET, " 3r/s   burst=5 ", 3, 1000, 5},
        {RRL_LEAKY_BUCKET, "5r/10", 5, 10000, RRL_BURST_UNSET},
        {RRL_LEAKY_BUCKET, "5r/m burst=2", 5, 60000, 2},
    };
    int n = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.value);
        std::string name = "k" + std::to_string(n++);
        std::string tag = rrl::algorithm(c.algorithm)->name.data();
        set(limit_key(name), c.value);
        Limit zone = with_overrides(
            make_limit(c.algorithm, state_key(name, tag), 100, 60000));
        Limit plain = make_limit(c.algorithm, "plain:" + name, c.limit,
                                 c.period_ms, c.burst);
        int rejected = 0;
        for (int i = 0; i < 12; i++) {
            std::int64_t now = kT + i * 150 * kMs;
            Values got = check(now, {zone});
            Values want = check(now, {plain});
            ASSERT_EQ(got.size(), 10u);
            EXPECT_EQ(Values(got.begin(), got.begin() + 6), want) << i;
            EXPECT_EQ(
                Values(got.begin() + 6, got.end()),
                (Values{RRL_OVERRIDE_RATE, c.limit, c.period_ms, plain.burst}))
                << i;
            if (got[0] == 0) rejected++;
        }
        EXPECT_GT(rejected, 0);  // the override's limit, not the zone's 100
    }
}

TEST_F(OverridesTest, BlockWithoutTtlWaitsTheZonesPeriod) {
    set(limit_key("k"), "block");
    Limit l = with_overrides(tb(state_key("k", "tb"), 5, 3000));
    for (int i = 0; i < 3; i++) {
        Values v = check(kT + i * kMs, {l});
        EXPECT_EQ(v, (Values{0, kT + i * kMs, 0, 0, 3 * kS, 3 * kS,
                             RRL_OVERRIDE_BLOCK, 0, 3000, 0}));
    }
    EXPECT_EQ(exists(l.key), 0);  // nothing counted
}

TEST_F(OverridesTest, BlockWithTtlWaitsTheTtl) {
    ASSERT_EQ(redis_->status_or_string(
                  {"SET", limit_key("k"), "block", "PX", "2500"}),
              "OK");
    Values v = check(kT, {with_overrides(fw(state_key("k", "fw"), 5, 60000))});
    ASSERT_EQ(v.size(), 10u);
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[3], 0);
    EXPECT_EQ(v[4], v[5]);
    EXPECT_LE(v[5], 2500 * kMs);
    EXPECT_GT(v[5], 1500 * kMs);  // the TTL's, not the zone's minute
    EXPECT_EQ(v[6], RRL_OVERRIDE_BLOCK);
}

TEST_F(OverridesTest, UnlimitedPassesAndCountsNothing) {
    set(limit_key("k"), "unlimited");
    Limit l = with_overrides(fw(state_key("k", "fw"), 1, 1000, 0, 5));
    for (int i = 0; i < 5; i++) {
        EXPECT_EQ(check(kT, {l}), (Values{1, kT, 1, 0, 0, 0,
                                          RRL_OVERRIDE_UNLIMITED, 1, 1000, 0}));
    }
    EXPECT_EQ(exists(l.key), 0);
}

// An unlimited limit never rejects; the request's other limits apply, and
// a rejection by them consumes from none.
TEST_F(OverridesTest, UnlimitedBesideAnotherLimit) {
    set(limit_key("u"), "unlimited");
    Limit u = with_overrides(fw(state_key("u", "fw"), 1, 1000));
    Limit other = fw(state_key("o", "fw"), 1, 1000);
    EXPECT_EQ(check(kT, {u, other})[0], 1);
    Values v = check(kT, {u, other});
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[2], 1);
    EXPECT_EQ(v[10], 0);
}

TEST_F(OverridesTest, InvalidValuesLeaveTheZonesLimit) {
    const char* bad[] = {
        "",
        " ",
        "10",
        "10r",
        "r/s",
        "0r/s",
        "10r/x",
        "10r/S",
        "10R/s",
        "10r/ms",
        "10r/0s",
        "10r/30m1h",
        "10r/s burst",
        "10r/s burst=",
        "10r/s burst=-1",
        "10r/s burst=x",
        "10r/s burst=1 x",
        "10r/sburst=1",
        "Unlimited",
        "BLOCK",
        "blocked",
        "unlimited x",
        "block 1",
        "99999999999999999999r/s",
        "10r/s burst=99999999999999999999",
        "10001r/s",  // sliding_log: at most 10000
        "1r/s burst=10000",
    };
    int n = 0;
    for (const char* value : bad) {
        SCOPED_TRACE(std::string("\"") + value + "\"");
        std::string name = "k" + std::to_string(n++);
        set(limit_key(name), value);
        Limit l = with_overrides(sl(state_key(name, "sl"), 2, 1000));
        EXPECT_EQ(check(kT, {l}), (Values{1, kT, 1, 1, kS, 0,
                                          RRL_OVERRIDE_INVALID, 2, 1000, 0}));
        EXPECT_EQ(zcard(l.key), 1);  // counted under the zone's limit
    }
}

TEST_F(OverridesTest, BucketBoundsAreTheZones) {
    // a bucket with no room, and one kept for over 100 years
    set(limit_key("a"), "5r/s burst=0");
    set(limit_key("b"), "1r/365d burst=1000000000");
    for (const char* name : {"a", "b"}) {
        Values v =
            check(kT, {with_overrides(tb(state_key(name, "tb"), 2, 1000))});
        ASSERT_EQ(v.size(), 10u);
        EXPECT_EQ(v[6], RRL_OVERRIDE_INVALID) << name;
        EXPECT_EQ(v[7], 2);
    }
}

// N and B as a zone's rate= and burst= may have them: up to 10^9
TEST_F(OverridesTest, NumbersUpToAZonesBounds) {
    const std::pair<const char*, int> cases[] = {
        {"1000000000r/h burst=1000000000", RRL_OVERRIDE_RATE},
        {"1000000001r/h", RRL_OVERRIDE_INVALID},
        {"10r/h burst=1000000001", RRL_OVERRIDE_INVALID},
        {"1r/36500d", RRL_OVERRIDE_RATE},  // 100 years: a window that long
        {"1r/36501d", RRL_OVERRIDE_INVALID},
    };
    int n = 0;
    for (const auto& [value, kind] : cases) {
        std::string name = "k" + std::to_string(n++);
        set(limit_key(name), value);
        Values v =
            check(kT, {with_overrides(fw(state_key(name, "fw"), 5, 1000))});
        ASSERT_EQ(v.size(), 10u) << value;
        EXPECT_EQ(v[6], kind) << value;
    }
}

TEST_F(OverridesTest, AKeyOfAnotherTypeIsInvalid) {
    ASSERT_EQ(redis_->integer({"RPUSH", limit_key("k"), "x"}), 1);
    Values v = check(kT, {with_overrides(fw(state_key("k", "fw"), 5, 1000))});
    EXPECT_EQ(v,
              (Values{1, kT, 1, 4, kS, 0, RRL_OVERRIDE_INVALID, 5, 1000, 0}));
}

TEST_F(OverridesTest, HashedKeyHasItsOwnOverride) {
    std::string hashed = "#0123456789abcdef0123456789abcdef01234567";
    set(limit_key(hashed), "block");
    Values v =
        check(kT, {with_overrides(fw(state_key(hashed, "fw"), 5, 1000)),
                   with_overrides(fw(state_key("other", "fw"), 5, 1000))});
    ASSERT_EQ(v.size(), 18u);
    EXPECT_EQ(v[6], RRL_OVERRIDE_BLOCK);
    EXPECT_EQ(v[14], RRL_OVERRIDE_NONE);
}

TEST_F(OverridesTest, ReleaseGivesBackUnderTheOverride) {
    set(limit_key("k"), "2r/s");
    Limit l = with_overrides(fw(state_key("k", "fw"), 100, 1000));
    EXPECT_EQ(check(kT, {l})[0], 1);
    EXPECT_EQ(check(kT, {l})[0], 1);
    EXPECT_EQ(check(kT, {l})[0], 0);
    EXPECT_EQ(release(kT, kT + 1, {l}), 1);
    EXPECT_EQ(check(kT + 2, {l})[0], 1);

    set(limit_key("u"), "unlimited");
    set(limit_key("b"), "block");
    EXPECT_EQ(release(kT, kT + 1,
                      {with_overrides(fw(state_key("u", "fw"), 1, 1000)),
                       with_overrides(fw(state_key("b", "fw"), 1, 1000))}),
              0);
}

// A batch whose requests share override values and mix zones with and
// without overrides answers as the requests one by one.
TEST_F(OverridesTest, BatchAsOneByOne) {
    for (const char* p : {"b", "s"}) {
        set("rrl:{z:" + std::string(p) + "1}:limit", "2r/s");
        set("rrl:{z:" + std::string(p) + "2}:limit", "2r/s");
        set("rrl:{z:" + std::string(p) + "3}:limit", "unlimited");
        set("rrl:{z:" + std::string(p) + "4}:limit", "block");
        set("rrl:{z:" + std::string(p) + "5}:limit", "nonsense");
    }
    auto request = [](const std::string& p, int i) {
        std::vector<Limit> r = {with_overrides(
            fw("rrl:{z:" + p + std::to_string(1 + i % 5) + "}:fw", 3, 1000))};
        if (i % 2 == 0) r.push_back(fw("rrl:{z:" + p + "x}:fw", 6, 1000));
        return r;
    };
    std::vector<std::vector<Limit>> reqs;
    Values want;
    for (int i = 0; i < 12; i++) {
        reqs.push_back(request("b", i));
        Values one = check(kT, request("s", i));
        want.insert(want.end(), one.begin(), one.end());
    }
    EXPECT_EQ(batch(kT, reqs), want);
}

}  // namespace
