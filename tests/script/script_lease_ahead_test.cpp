// Leases ahead: a renewal's cost field "0:W:0:0:1" (fixed_window,
// sliding_window) takes G = min(W, available) units of the window after
// the current one, counted in "<key>:ahead" as that window's before it
// starts. That window's state takes them in at its first write, which
// drops the ahead key; until then every check, release and settlement of
// the lease zone reads them as its count. sliding_window's checks count
// them against the current window too: at the next window's start, its
// count weighs in full. Real script, real redis-server, injected time.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/script/script_lease_fixture.hpp"

namespace {

using namespace rrl_test;

Arg ahead(const Limit& l, std::int64_t want) {
    return lease_field(l, "0:" + str(want) + ":0:0:1");
}

class LeaseAheadTest : public LeaseTest {
   protected:
    std::string ahead_of(const Limit& l) { return state(l.key + ":ahead"); }

    // A batch of one settlement of l (its zone with lease=): estimate e,
    // actual a, charged at t; the raw reply.
    Reply settle(std::int64_t now, const Limit& l, std::int64_t e,
                 std::int64_t a, std::int64_t t) {
        return evalsha_of(persisting_sha_, {l.key},
                          {"batch", str(now), "1", l.algorithm + kLeaseSuffix,
                           str(l.limit), str(l.period_ms), str(l.burst), "s1",
                           "1", str(e) + ":" + str(a) + ":" + str(t)});
    }
};

// --- fixed_window -----------------------------------------------------------

TEST_F(LeaseAheadTest, FixedWindowTakesTheNextWindowsUnits) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    ASSERT_EQ(one(kT + 100 * kMs, lease(l, 1, 4)).granted, 4);

    Row r = one(kT + 600 * kMs, ahead(l, 5));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 5);
    EXPECT_EQ(r.remaining, 5);
    EXPECT_EQ(r.life_us, 1400 * kMs);  // until the next window's end
    EXPECT_EQ(r.reset_after_us, 1400 * kMs);
    EXPECT_EQ(r.retry_after_us, 0);
    EXPECT_EQ(state(l.key), "1700000000:4");  // this window's: as it was
    EXPECT_EQ(ahead_of(l), "1700000001:5");

    // what is left of the next window
    r = one(kT + 700 * kMs, ahead(l, 8));
    EXPECT_EQ(r.granted, 5);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(ahead_of(l), "1700000001:10");
    r = one(kT + 800 * kMs, ahead(l, 1));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.granted, 0);
    EXPECT_EQ(r.life_us, 0);
    EXPECT_EQ(ahead_of(l), "1700000001:10");

    // this window's checks do not count them
    r = one(kT + 900 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000000:5");

    // the next window's do: all 10 taken, refused until its end
    r = one(kT + 1100 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.retry_after_us, 900 * kMs);
    EXPECT_EQ(ahead_of(l), "1700000001:10");
}

TEST_F(LeaseAheadTest, FixedWindowsFirstWriteTakesThemIn) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 5)).granted, 5);

    Row r = one(kT + 1100 * kMs, lease(l, 1, 2));
    EXPECT_EQ(r.granted, 2);
    EXPECT_EQ(r.remaining, 3);
    EXPECT_EQ(state(l.key), "1700000001:7");
    EXPECT_EQ(ahead_of(l), "");
    EXPECT_EQ(one(kT + 1200 * kMs, lease(l, 1, 9)).granted, 3);

    // units taken ahead for a window that has ended weigh nothing
    ASSERT_EQ(one(kT + 1600 * kMs, ahead(l, 4)).granted, 4);
    r = one(kT + 3100 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.remaining, 9);
    EXPECT_EQ(state(l.key), "1700000003:1");
}

// An ahead of the window after, its own window begun and not in the state
// yet: the state takes them in first.
TEST_F(LeaseAheadTest, FixedWindowAheadOfAheadWritesTheStateFirst) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 5)).granted, 5);
    Row r = one(kT + 1600 * kMs, ahead(l, 3));
    EXPECT_EQ(r.granted, 3);
    EXPECT_EQ(r.remaining, 7);
    EXPECT_EQ(state(l.key), "1700000001:5");
    EXPECT_EQ(ahead_of(l), "1700000002:3");
    EXPECT_EQ(one(kT + 1700 * kMs, lease(l, 1, 1)).remaining, 4);
    EXPECT_EQ(state(l.key), "1700000001:6");
}

// A release and a settlement read them as the window's count.
TEST_F(LeaseAheadTest, FixedWindowReleaseAndSettlementTakeThemIn) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 5)).granted, 5);
    Reply rel = release_of(kT + 1100 * kMs, kT + 1200 * kMs, {lease(l, 2, 2)});
    ASSERT_EQ(rel->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(rel->integer, 1);
    EXPECT_EQ(state(l.key), "1700000001:3");
    EXPECT_EQ(ahead_of(l), "");

    const Limit k = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:b}:fw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(k, 5)).granted, 5);
    // a charge of 2 more than the estimate
    std::vector<std::int64_t> v =
        integers(settle(kT + 1200 * kMs, k, 1, 3, kT + 1100 * kMs));
    ASSERT_EQ(v.size(), RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[RRL_REPLY_HEADER + 1], 2);  // 10 - 7 - a check of 1
    EXPECT_EQ(state(k.key), "1700000001:7");
    EXPECT_EQ(ahead_of(k), "");
}

// --- sliding_window ---------------------------------------------------------

TEST_F(LeaseAheadTest, SlidingWindowLeavesWhatTheNextWindowsStartLeaves) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    ASSERT_EQ(one(kT + 100 * kMs, lease(l, 1, 4)).granted, 4);

    // at the next window's start, these 4 weigh in full: 6 left
    Row r = one(kT + 600 * kMs, ahead(l, 10));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 6);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.life_us, 1400 * kMs);
    EXPECT_EQ(r.reset_after_us, 2400 * kMs);  // they weigh in the one after
    EXPECT_EQ(state(l.key), "1700000000:4:0");
    EXPECT_EQ(ahead_of(l), "1700000001:6");

    // this window's checks count them: 4 + 1 + 6 > 10, until the next
    // window's count (4 x 0.75 + 6 + 1 = 10) lets one pass
    r = one(kT + 700 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.retry_after_us, 550 * kMs);
    EXPECT_EQ(state(l.key), "1700000000:4:0");

    r = one(kT + 1250 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000001:7:4");
    EXPECT_EQ(ahead_of(l), "");
}

// This window's count fills it exactly, with none before it: only the
// units ahead refuse the check, and its wait is theirs alone (the
// estimate's own, 0 / 0 here, is not one).
TEST_F(LeaseAheadTest, SlidingWindowRetryWhenOnlyTheyRefuse) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    ASSERT_EQ(one(kT + 100 * kMs, lease(l, 1, 9)).granted, 9);
    ASSERT_EQ(one(kT + 500 * kMs, ahead(l, 5)).granted, 1);
    Row r = one(kT + 600 * kMs, lease(l, 1, 1));  // 9 + 1 <= 10, + 1 ahead
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 0);
    // 9 x (1 - f) + 1 + 1 <= 10 from f = 1/9 of the next window
    EXPECT_EQ(r.retry_after_us, 511112);
    r = one(kT + 600 * kMs + 511112, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 1);
}

// No room left at all: they decay as the count before the window after.
TEST_F(LeaseAheadTest, SlidingWindowRetryWhenTheyFillTheNextWindow) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 10)).granted, 10);
    Row r = one(kT + 700 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 0);
    // 10 x (1 - f) + 1 <= 10 from f = 0.1 of the window after the next
    EXPECT_EQ(r.retry_after_us, 1400 * kMs);
    r = one(kT + 2100 * kMs, lease(l, 1, 1));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(state(l.key), "1700000002:1:10");
}

TEST_F(LeaseAheadTest, SlidingWindowAheadOfAheadWritesTheStateFirst) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    ASSERT_EQ(one(kT + 100 * kMs, lease(l, 1, 4)).granted, 4);
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 6)).granted, 6);
    Row r = one(kT + 1600 * kMs, ahead(l, 10));
    EXPECT_EQ(r.granted, 4);
    EXPECT_EQ(state(l.key), "1700000001:6:4");
    EXPECT_EQ(ahead_of(l), "1700000002:4");
}

// Not in the state yet, a window on: they weigh as the previous count.
TEST_F(LeaseAheadTest, SlidingWindowReadsThemAsThePreviousCount) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    ASSERT_EQ(one(kT + 600 * kMs, ahead(l, 8)).granted, 8);
    Row r = one(kT + 2500 * kMs, lease(l, 1, 1));  // 8 x 0.5 + 1
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.remaining, 5);
    EXPECT_EQ(state(l.key), "1700000002:1:8");
    EXPECT_EQ(ahead_of(l), "");
}

// A window over a day: none granted, none read (a key set by hand).
TEST_F(LeaseAheadTest, WindowsOfADayAtMost) {
    const Limit day =
        make_limit(RRL_FIXED_WINDOW, "rrl:{z:d}:fw", 10, 86400000, 0, 1);
    Row r = one(kT + 600 * kMs, ahead(day, 5));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 5);

    for (int algorithm : {RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW}) {
        const Limit l = make_limit(
            algorithm, "rrl:{z:l}:" + alg_name(algorithm), 10, 86400001, 0, 1);
        r = one(kT + 600 * kMs, ahead(l, 5));
        EXPECT_EQ(r.passed, 0);
        EXPECT_EQ(r.granted, 0);
        EXPECT_EQ(r.retry_after_us, 86400001 * kMs);
        EXPECT_EQ(ahead_of(l), "");
        set(l.key + ":ahead", str(kT / (86400001 * kMs)) + ":10");
        r = one(kT + 600 * kMs, lease(l, 1, 1));
        EXPECT_EQ(r.passed, 1);
        EXPECT_EQ(r.remaining, 9);
    }
}

// --- the form -----------------------------------------------------------

TEST_F(LeaseAheadTest, OnlyARenewalOfAWindowsAlgorithm) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    for (const char* field :
         {"1:5:0:0:1", "0:5:1:0:1", "0:5:0:1:1", "0:5:0:0:2", "0:0:0:0:1",
          "0:5:0:0:1:1", "0:5:0:0:"}) {
        const Call c = call(kT, {lease_field(l, field)});
        EXPECT_TRUE(c.error) << field;
        EXPECT_EQ(c.error_text, "ERR redis_ratelimit: bad arguments") << field;
    }
    const Limit tb = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb");
    EXPECT_TRUE(call(kT, {ahead(tb, 5)}).error);
    EXPECT_EQ(state(l.key), "");
    EXPECT_EQ(ahead_of(l), "");
    EXPECT_EQ(state(tb.key), "");
}

TEST_F(LeaseAheadTest, InABatchAsAlone) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    const Limit k = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    std::vector<std::int64_t> v = integers(batch_raw(
        kT + 600 * kMs, {{ahead(l, 5)}, {lease(k, 1, 3)}, {ahead(k, 4)}}));
    const std::size_t w = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT + 2;
    ASSERT_EQ(v.size(), 3 * w);
    EXPECT_EQ(v[RRL_REPLY_HEADER + 4], 5);
    EXPECT_EQ(v[w + RRL_REPLY_HEADER + 4], 3);
    EXPECT_EQ(v[2 * w + RRL_REPLY_HEADER + 4], 4);  // of 7
    EXPECT_EQ(ahead_of(l), "1700000001:5");
    EXPECT_EQ(state(k.key), "1700000000:3:0");
    EXPECT_EQ(ahead_of(k), "1700000001:4");
}

}  // namespace
