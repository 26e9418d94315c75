// Every algorithm's state and every wait stay within what the module's
// decoder takes (rrl_test::call_reply_decode(): waits up to RRL_MAX_STATE_MS, a
// remaining up to the applied limit's capacity), whatever a settlement, an
// override or a cost does to them; and a change of limit (an override set
// or deleted) takes effect at once on leaky_bucket too (issue 25). Real
// script, real redis-server, injected time.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "api/rrl_settle.h"
#include "script/algorithm.hpp"
#include "tests/script/script_fixture.hpp"
#include "tests/support/call_limit.hpp"

namespace {

using namespace rrl_test;

using Values = std::vector<std::int64_t>;

constexpr std::int64_t kMaxUs =
    static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;
constexpr std::int64_t kMaxCost = static_cast<std::int64_t>(RRL_MAX_COST);
constexpr std::int64_t kMaxSettle = static_cast<std::int64_t>(RRL_SETTLE_MAX);
constexpr std::int64_t kS = 1000 * kMs;

const int kAlgorithms[] = {RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW,
                           RRL_SLIDING_LOG, RRL_TOKEN_BUCKET, RRL_LEAKY_BUCKET};

std::string alg_name(int algorithm) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? "?" : std::string(a->name);
}

// A zone's numbers: its limit, period and burst (burst=, RRL_BURST_UNSET:
// not given).
struct Zone {
    std::int64_t limit, period_ms;
    std::uint64_t burst;
};

// The largest accepted values of each algorithm, and the issue's.
std::vector<Zone> zones_of(int algorithm) {
    const std::int64_t max_period = static_cast<std::int64_t>(RRL_MAX_STATE_MS);
    const std::int64_t n = algorithm == RRL_SLIDING_LOG ? 5000 : 1000000000;
    const std::uint64_t b = algorithm == RRL_SLIDING_LOG ? 5000 : 1000000000;
    std::vector<Zone> zones = {
        {100000, 3600000, RRL_BURST_UNSET},  // the issue's: 100000r/h
        {1000, 86400000, RRL_BURST_UNSET},   // 1000r/d
        {1, 1, RRL_BURST_UNSET},             // 1r/1ms
        {n, 1, b},                           // the fastest, the largest
        {n, 1, RRL_BURST_UNSET},
    };
    // the slowest: a state as long as any
    zones.push_back(
        {1, algorithm == RRL_SLIDING_WINDOW ? max_period / 2 : max_period,
         RRL_BURST_UNSET});
    return zones;
}

class BoundsTest : public ScriptFixture {
   protected:
    // The limit as the module sends it, and its C form for the decoder.
    struct Both {
        Limit script;
        rrl_call_limit_t c;
    };

    static Both both(int algorithm, const std::string& key, const Zone& z,
                     bool overrides = false) {
        Both out{make_limit(algorithm, key, z.limit, z.period_ms, z.burst, 1),
                 call_limit("z", algorithm, static_cast<std::uint64_t>(z.limit),
                            static_cast<std::uint64_t>(z.period_ms), 0)};
        out.c.burst = static_cast<std::uint64_t>(out.script.burst);
        set_key(out.c, "k");
        if (overrides) {
            out.script.algorithm += RRL_OVERRIDES_SUFFIX;
            out.c.overrides = 1;
        }
        return out;
    }

    // The module's decoding of a reply: RRL_OK, and the limit's result.
    struct Decoded {
        int rc = RRL_ERROR;
        rrl_limit_result_t result{};
        Values raw;
    };

    static Decoded decode(const Values& v, rrl_call_limit_t c) {
        Decoded d;
        d.raw = v;
        rrl_decision_t decision{};
        d.rc = rrl_test::call_reply_decode(v.data(), v.size(), &c, 1, &d.result,
                                           &decision);
        return d;
    }

    // A check of cost at now (committed on a pass), keys persisted.
    Decoded check(std::int64_t now, const Both& l, std::int64_t cost) {
        return decode(
            integers(evalsha_of(
                persisting_sha_, {l.script.key},
                {str(now), l.script.algorithm, str(l.script.limit),
                 str(l.script.period_ms), str(l.script.burst), str(cost)})),
            l.c);
    }

    // A settlement "E:A:T" at now, in a batch (injected time).
    Decoded settle(std::int64_t now, const Both& l, std::int64_t e,
                   std::int64_t a, std::int64_t t,
                   const std::string& charged = "") {
        return decode(
            integers(evalsha_of(persisting_sha_, {l.script.key},
                              {"batch", str(now), "1", l.script.algorithm,
                               str(l.script.limit), str(l.script.period_ms),
                               str(l.script.burst), "s1", "1",
                               str(e) + ":" + str(a) + ":" + str(t) +
                                   (charged.empty() ? "" : ":" + charged)})),
            l.c);
    }

    // The check of cost at now on a copy of l's state (l's unchanged).
    Decoded probe(std::int64_t now, const Both& l, std::int64_t cost) {
        Both p = l;
        p.script.key = l.script.key + ":copy";
        redis_->command({"DEL", p.script.key});
        Reply d = redis_->command({"DUMP", l.script.key});
        if (d->type == REDIS_REPLY_STRING) {
            redis_->command(
                {"RESTORE", p.script.key, "0", std::string(d->str, d->len)});
        }
        Decoded r = check(now, p, cost);
        redis_->command({"DEL", p.script.key});
        return r;
    }

    // The limit's capacity as the module reckons it.
    static std::int64_t capacity(const Both& l) {
        return static_cast<std::int64_t>(rrl::capacity(
            *rrl::algorithm(l.c.algorithm), l.c.limit, l.c.burst));
    }
};

// Item 1: a charge of the largest cost settled at the largest actual
// (10^12) leaves a state every later check's reply decodes, rejected with
// an exact retry after (at most RRL_MAX_STATE_MS: a debt is not held
// longer), and the settlement's own reply decodes too.
TEST_F(BoundsTest, ALargestDebtIsRejectedWithAnExactRetryAfter) {
    for (int alg : kAlgorithms) {
        int z = 0;
        for (const Zone& zone : zones_of(alg)) {
            SCOPED_TRACE(alg_name(alg) + " zone " + std::to_string(z));
            const Both l =
                both(alg, "rrl:{d:" + alg_name(alg) + str(z++) + "}", zone);
            const std::int64_t e = std::min(capacity(l), kMaxCost);
            ASSERT_EQ(check(kT, l, e).result.passed, 1);
            const Decoded s = settle(kT + 1, l, e, kMaxSettle, kT);
            ASSERT_EQ(s.rc, RRL_OK) << ::testing::PrintToString(s.raw);
            EXPECT_EQ(s.result.passed, 0);
            for (std::int64_t cost : {std::int64_t{1}, e}) {
                SCOPED_TRACE("cost " + str(cost));
                const std::int64_t now = kT + 2;
                const Decoded r = probe(now, l, cost);
                ASSERT_EQ(r.rc, RRL_OK) << ::testing::PrintToString(r.raw);
                ASSERT_EQ(r.result.passed, 0);
                const std::int64_t retry = r.result.retry_after_us;
                ASSERT_LE(retry, kMaxUs);
                ASSERT_LE(r.result.reset_after_us, kMaxUs);
                if (retry > 1) {
                    EXPECT_EQ(probe(now + retry - 1, l, cost).result.passed, 0);
                }
                const Decoded later = probe(now + retry, l, cost);
                EXPECT_EQ(later.rc, RRL_OK);
                EXPECT_EQ(later.result.passed, 1);
            }
        }
    }
}

// Item 1, as reported: 100000r/h, cost 2000, settled at 10^11; and
// 1000r/d settled at 36 MB. The debt is held as one of 100 years.
TEST_F(BoundsTest, TheIssuesTokenBucketDebtsStayWithinTheDecoder) {
    struct Case {
        Zone zone;
        std::int64_t e, a;
    };
    for (const Case& c :
         {Case{{100000, 3600000, RRL_BURST_UNSET}, 2000, 100000000000},
          Case{{1000, 86400000, RRL_BURST_UNSET}, 1, 36000000}}) {
        SCOPED_TRACE(c.a);
        const Both l =
            both(RRL_TOKEN_BUCKET, "rrl:{i:" + str(c.a) + "}", c.zone);
        ASSERT_EQ(check(kT, l, c.e).result.passed, 1);
        const Decoded s = settle(kT, l, c.e, c.a, kT);
        ASSERT_EQ(s.rc, RRL_OK) << ::testing::PrintToString(s.raw);
        EXPECT_EQ(s.result.passed, 0);
        const Decoded r = check(kT + kS, l, c.e);
        ASSERT_EQ(r.rc, RRL_OK) << ::testing::PrintToString(r.raw);
        EXPECT_EQ(r.result.passed, 0);
        EXPECT_GT(r.result.retry_after_us, std::int64_t{90} * 365 * 86400 * kS);
        EXPECT_LE(pttl(l.script.key), static_cast<long long>(RRL_MAX_STATE_MS));
    }
}

// Item 4: the overrides at the bounds the script takes; every reply
// decodes (remaining within the applied capacity, waits within the
// bound), checks, costs and settlements alike.
TEST_F(BoundsTest, OverridesAtTheBoundsAlwaysDecode) {
    const char* values_[] = {"1000000000r/1ms burst=1000000000",
                             "1000000000r/1ms",
                             "1r/1ms",
                             "10000r/1ms",
                             "1r/36500d",
                             "1r/36500d burst=1",
                             "1000000000r/36500d burst=1000000000"};
    for (int alg : kAlgorithms) {
        int i = 0;
        for (const char* value : values_) {
            SCOPED_TRACE(alg_name(alg) + " " + value);
            const std::string tag = "{o:" + alg_name(alg) + str(i++) + "}";
            const Both l = both(alg, "rrl:" + tag + ":s", {10, 1000, 5}, true);
            set("rrl:" + tag + ":limit", value);
            std::int64_t now = kT;
            for (std::int64_t cost :
                 {std::int64_t{1}, std::int64_t{1}, kMaxCost, std::int64_t{7},
                  kMaxCost / 2, std::int64_t{1}}) {
                SCOPED_TRACE("cost " + str(cost) + " at " + str(now - kT));
                const Decoded r = check(now, l, cost);
                EXPECT_EQ(r.rc, RRL_OK) << ::testing::PrintToString(r.raw);
                now += 1;
            }
            const Decoded s = settle(now, l, 1, kMaxSettle, kT);
            EXPECT_EQ(s.rc, RRL_OK) << ::testing::PrintToString(s.raw);
            const Decoded r = check(now + 1, l, 1);
            EXPECT_EQ(r.rc, RRL_OK) << ::testing::PrintToString(r.raw);
        }
    }
}

// Item 4, the zones themselves at the bounds: every check decodes.
TEST_F(BoundsTest, ZonesAtTheBoundsAlwaysDecode) {
    for (int alg : kAlgorithms) {
        int z = 0;
        for (const Zone& zone : zones_of(alg)) {
            SCOPED_TRACE(alg_name(alg) + " zone " + std::to_string(z));
            const Both l =
                both(alg, "rrl:{b:" + alg_name(alg) + str(z++) + "}", zone);
            std::int64_t now = kT;
            for (std::int64_t cost : {std::int64_t{1}, std::int64_t{1},
                                      kMaxCost, std::int64_t{3}}) {
                const Decoded r = check(now++, l, cost);
                EXPECT_EQ(r.rc, RRL_OK) << ::testing::PrintToString(r.raw);
            }
        }
    }
}

// Item 3, as reported: 10r/s burst=5, an override of 1r/h burst=2 taken
// 3 times, deleted: 1 s later the zone's rate applies again.
TEST_F(BoundsTest, LeakyBucketRecoversWhenAnOverrideIsDeleted) {
    const Both l =
        both(RRL_LEAKY_BUCKET, "rrl:{lb:abuser}:lb", {10, 1000, 5}, true);
    set("rrl:{lb:abuser}:limit", "1r/h burst=2");
    for (int i = 0; i < 3; i++) ASSERT_EQ(check(kT, l, 1).result.passed, 1);
    Decoded r = check(kT, l, 1);
    EXPECT_EQ(r.result.passed, 0);
    EXPECT_EQ(r.result.retry_after_us, 3600 * kS);
    redis_->command({"DEL", "rrl:{lb:abuser}:limit"});
    // the 3 units (less the 1 s of 1 h gone by under it) at the zone's
    // 100 ms: 0.3 s of its 0.6 s
    r = check(kT + kS, l, 1);
    ASSERT_EQ(r.rc, RRL_OK);
    EXPECT_EQ(r.result.passed, 1);
    EXPECT_EQ(r.result.remaining, 2);
    EXPECT_EQ(probe(kT + kS + 300 * kMs, l, 6).result.passed, 0);
    EXPECT_EQ(probe(kT + kS + 400 * kMs, l, 6).result.passed, 1);
    // at once: the units taken under the override count at the zone's
    // interval (3 units, 0.3 s of the 0.6 s horizon)
    const Both m = both(RRL_LEAKY_BUCKET, "rrl:{lb:m}:lb", {10, 1000, 5}, true);
    set("rrl:{lb:m}:limit", "1r/h burst=2");
    for (int i = 0; i < 3; i++) ASSERT_EQ(check(kT, m, 1).result.passed, 1);
    redis_->command({"DEL", "rrl:{lb:m}:limit"});
    r = check(kT, m, 1);
    EXPECT_EQ(r.result.passed, 1);
    EXPECT_EQ(r.result.remaining, 2);
}

// Item 3, the other way: the units taken at the zone's rate count under
// an override set later (at most its capacity), as token_bucket's do.
TEST_F(BoundsTest, LeakyBucketUnitsCarryOverToAnOverrideSetLater) {
    const Both l = both(RRL_LEAKY_BUCKET, "rrl:{lb:u}:lb", {10, 1000, 5}, true);
    for (int i = 0; i < 6; i++) ASSERT_EQ(check(kT, l, 1).result.passed, 1);
    set("rrl:{lb:u}:limit", "1r/h burst=2");
    // full under 1r/h burst=2: 3 units, the next in 1 h
    Decoded r = check(kT, l, 1);
    EXPECT_EQ(r.result.passed, 0);
    EXPECT_EQ(r.result.retry_after_us, 3600 * kS);
    // the zone's own again: its 6 units, as stored (nothing was taken
    // under the override), the next in 100 ms
    redis_->command({"DEL", "rrl:{lb:u}:limit"});
    r = check(kT, l, 1);
    EXPECT_EQ(r.result.passed, 0);
    EXPECT_EQ(r.result.retry_after_us, 100 * kMs);
    // one taken under the override (1 h of its 3 h): 1 unit of the zone's
    // 100 ms once deleted
    set("rrl:{lb:u}:limit", "1r/h burst=2");
    ASSERT_EQ(check(kT + 3600 * kS, l, 1).result.passed, 1);
    EXPECT_EQ(get(l.script.key), str(kT + 7200 * kS) + "@1/3600000/2");
    redis_->command({"DEL", "rrl:{lb:u}:limit"});
    r = check(kT + 3600 * kS, l, 1);
    EXPECT_EQ(r.result.passed, 1);
    EXPECT_EQ(r.result.remaining, 4);
    EXPECT_EQ(get(l.script.key),
              str(kT + 3600 * kS + 200 * kMs) + "@10/1000/5");
    // a debt carries over in units: 100 units beyond the capacity at the
    // override's interval, then at the zone's
    const Both d = both(RRL_LEAKY_BUCKET, "rrl:{lb:d}:lb", {10, 1000, 5}, true);
    set("rrl:{lb:d}:limit", "1r/s burst=2");
    ASSERT_EQ(check(kT, d, 1).result.passed, 1);
    ASSERT_EQ(settle(kT, d, 1, 103, kT).result.passed, 0);
    EXPECT_EQ(probe(kT, d, 1).result.retry_after_us, 101 * kS);
    redis_->command({"DEL", "rrl:{lb:d}:limit"});
    // 103 units at 100 ms, 6 of them the capacity: 9.8 s until one fits
    EXPECT_EQ(probe(kT, d, 1).result.retry_after_us, 9800 * kMs);
}

// Item 3's class: token_bucket and the windows recover as the README says.
TEST_F(BoundsTest, EveryAlgorithmRecoversWhenAnOverrideIsDeleted) {
    for (int alg : kAlgorithms) {
        SCOPED_TRACE(alg_name(alg));
        const std::string tag = "{r:" + alg_name(alg) + "}";
        const Both l = both(alg, "rrl:" + tag + ":s", {10, 1000, 5}, true);
        set("rrl:" + tag + ":limit", "1r/h burst=2");
        while (check(kT, l, 1).result.passed == 1) {
        }
        redis_->command({"DEL", "rrl:" + tag + ":limit"});
        // the windows: a window of the zone's 1 s later
        EXPECT_EQ(check(kT + 2 * kS, l, 1).result.passed, 1);
    }
}

// R1: a settlement "E:A:T" applies the override in force when it
// settles. A request charged while its key was unlimited (nothing taken)
// would be settled as a debt of A - E once the override is deleted: the
// module does not send it (rrl_settle_plan(): the charge's override was
// unlimited).
TEST_F(BoundsTest, ASettlementUsesTheOverrideInForceWhenItSettles) {
    const Both l =
        both(RRL_FIXED_WINDOW, "rrl:{r1:k}:fw", {200, 1000, 0}, true);
    set("rrl:{r1:k}:limit", "unlimited");
    ASSERT_EQ(check(kT, l, 100).result.passed, 1);
    EXPECT_EQ(get(l.script.key), "(nil)");  // nothing taken
    redis_->command({"DEL", "rrl:{r1:k}:limit"});
    // the script cannot tell: it takes the debt A - E = 400 from now
    settle(kT, l, 100, 500, kT);
    EXPECT_EQ(get(l.script.key), str(kT / kS) + ":400");
    // charged under a rate, then unlimited: skipped
    const Both m =
        both(RRL_FIXED_WINDOW, "rrl:{r1:m}:fw", {200, 1000, 0}, true);
    set("rrl:{r1:m}:limit", "50r/s");
    ASSERT_EQ(check(kT, m, 10).result.passed, 1);
    set("rrl:{r1:m}:limit", "unlimited");
    settle(kT, m, 10, 60, kT);
    EXPECT_EQ(get(m.script.key), str(kT / kS) + ":10");
}

// R1 fixed: "E:A:T:N:P:B" settles with the limit the charge applied
// (the module sends it for an overrides=on zone), whatever is in force
// when it settles; the reply is a check under the override in force.
TEST_F(BoundsTest, ASettlementWithTheChargesLimitAppliesIt) {
    // charged under 50r/s, then unlimited: the debt of 50 is taken, and
    // weighs once the override is deleted
    const Both m =
        both(RRL_FIXED_WINDOW, "rrl:{r2:m}:fw", {200, 1000, 0}, true);
    set("rrl:{r2:m}:limit", "50r/s");
    ASSERT_EQ(check(kT, m, 10).result.passed, 1);
    set("rrl:{r2:m}:limit", "unlimited");
    Decoded r = settle(kT, m, 10, 60, kT, "50:1000:0");
    EXPECT_EQ(r.rc, RRL_OK);
    EXPECT_EQ(r.result.passed, 1);  // unlimited now
    EXPECT_EQ(get(m.script.key), str(kT / kS) + ":60");
    // charged under the zone's own 200r/s in a 1 s window, then 1r/h set:
    // refunded to T's 1 s window (under 1r/h it would be dropped: T's
    // 1 h window is not the state's)
    const Both z =
        both(RRL_FIXED_WINDOW, "rrl:{r2:z}:fw", {200, 1000, 0}, true);
    ASSERT_EQ(check(kT, z, 100).result.passed, 1);
    set("rrl:{r2:z}:limit", "1r/h");
    r = settle(kT, z, 100, 30, kT, "200:1000:0");
    EXPECT_EQ(r.rc, RRL_OK);
    EXPECT_EQ(get(z.script.key), str(kT / kS) + ":30");
    // a bucket: the debt in the charge's units, read under the zone's
    const Both b = both(RRL_LEAKY_BUCKET, "rrl:{r2:b}:lb", {10, 1000, 5}, true);
    set("rrl:{r2:b}:limit", "1r/s burst=2");
    ASSERT_EQ(check(kT, b, 1).result.passed, 1);
    redis_->command({"DEL", "rrl:{r2:b}:limit"});
    r = settle(kT, b, 1, 11, kT, "1:1000:2");
    EXPECT_EQ(r.rc, RRL_OK);
    EXPECT_EQ(get(b.script.key), str(kT + 11 * kS) + "@1/1000/2");
    // 11 units at the zone's 100 ms, 6 the capacity: 0.6 s until one fits
    EXPECT_EQ(r.result.retry_after_us, 600 * kMs);
    // the form is an overrides=on zone's only, with N, P >= 1
    const Both plain = both(RRL_FIXED_WINDOW, "rrl:{r2:p}:fw", {200, 1000, 0});
    for (const char* bad : {"", "0:1000:0", "1:0:0", "1:1000", "1:1000:0:0"}) {
        SCOPED_TRACE(bad);
        Reply e = evalsha_of(
            persisting_sha_, {z.script.key},
            {"batch", str(kT), "1", z.script.algorithm, str(z.script.limit),
             str(z.script.period_ms), str(z.script.burst), "s1", "1",
             std::string("100:30:") + str(kT) + (*bad ? ":" : "") + bad});
        if (*bad == '\0') {
            EXPECT_EQ(e->type, REDIS_REPLY_ARRAY);
            continue;
        }
        ASSERT_EQ(e->type, REDIS_REPLY_ERROR);
    }
    Reply e = evalsha_of(
        persisting_sha_, {plain.script.key},
        {"batch", str(kT), "1", plain.script.algorithm, str(plain.script.limit),
         str(plain.script.period_ms), str(plain.script.burst), "s1", "1",
         "100:30:" + str(kT) + ":200:1000:0"});
    EXPECT_EQ(e->type, REDIS_REPLY_ERROR);
}

}  // namespace
