// lease.hpp: the lease table's rules. A request is decided from its keys'
// leases only when every one is usable, all or nothing; a call to Redis asks
// for the cost and a lease sized on the key's recent rate, and gives back
// what an ended lease left where that is exact; a reply's grant makes a new
// lease or adds to the one alive; renewals are asked for ahead of need.
#include "lease/lease.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "script/algorithm.hpp"
#include "base/rrl_call_args_types.h"
#include "base/rrl_lease_types.h"

namespace {

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kSecond = 1000 * kMs;
constexpr std::int64_t kNow = 5000 * kSecond;  // a monotonic clock's time
// the wall clock, on a minute's boundary: Redis's windows start here
constexpr std::int64_t kWall = std::int64_t{1699999980} * kSecond;
constexpr std::int64_t kRenewTimeout = 300 * kMs;
constexpr std::size_t kWidth = RRL_REPLY_PER_LIMIT + RRL_REPLY_LEASE;

rrl_lease_limit_t lease_limit(int algorithm, std::uint64_t limit,
                              std::uint64_t period_ms, unsigned percent,
                              std::uint64_t cost,
                              std::uint64_t burst = RRL_BURST_UNSET) {
    rrl_lease_limit_t l{};
    l.algorithm = algorithm;
    l.limit = limit;
    l.period_ms = period_ms;
    l.burst = rrl::effective_burst(*rrl::algorithm(algorithm), limit, burst);
    l.percent = percent;
    l.cost = cost;
    return l;
}

// 1000r/s, lease=10%
rrl_lease_limit_t sw1000(std::uint64_t cost = 1) {
    return lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, 10, cost);
}

rrl_lease_limit_t fw100(std::uint64_t cost = 1) {
    return lease_limit(RRL_FIXED_WINDOW, 100, 1000, 10, cost);
}

// An entry of limit's zone with a lease alive until kNow + 500 ms.
rrl_lease_entry_t alive(const rrl_lease_limit_t& l, std::uint64_t units) {
    rrl_lease_entry_t e{};
    e.end_us = kNow + 2 * kSecond;
    e.lease_end_us = kNow + 500 * kMs;
    e.units = units;
    e.taken_at_us = kWall - 200 * kMs;
    e.known = 700;
    e.used = 10;
    e.reset_end_us = kNow + 800 * kMs;
    e.seen_since_us = kNow;
    e.limit = l.limit;
    e.period_ms = l.period_ms;
    e.burst = l.burst;
    e.algorithm = l.algorithm;
    return e;
}

rrl_limit_result_t passed(std::int64_t remaining, std::int64_t reset_us) {
    return {1, remaining, reset_us, 0};
}

bool same_bytes(const rrl_lease_entry_t& a, const rrl_lease_entry_t& b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Want {
    std::uint64_t want;
    std::uint64_t back;
    std::int64_t back_at;
};

Want want_of(const rrl_lease_limit_t& l, rrl_lease_entry_t* e,
             std::int64_t now_us = kNow, std::int64_t wall_us = kWall) {
    Want w{99, 99, 99};
    rrl::lease_want(l, e, now_us, wall_us, &w.want, &w.back, &w.back_at);
    return w;
}

// A size, asked by a renewal (cost 0: no demand counted) of an entry whose
// demand this second is seen_cur units, at the wall clock's wall_us.
std::uint64_t size_at(const rrl_lease_limit_t& l, std::uint64_t seen_cur,
                      std::int64_t wall_us = kWall) {
    rrl_lease_limit_t renewal = l;
    renewal.cost = 0;
    rrl_lease_entry_t e = alive(l, 0);
    e.seen_cur = seen_cur;
    return want_of(renewal, &e, kNow, wall_us).want;
}

// --- decide ---------------------------------------------------------------

// P% of the capacity, at least 1: in 64 bits for every real zone, in 128
// where capacity times 100 would not fit, the same rule
TEST(LeaseMost, PercentOfTheCapacityAtLeastOne) {
    auto l = [](std::uint64_t n, unsigned percent) {
        return rrl_lease_limit_t{RRL_FIXED_WINDOW, n, 1000, 0, percent, 1};
    };
    EXPECT_EQ(rrl::lease_most(l(1000, 10)), 100u);
    EXPECT_EQ(rrl::lease_most(l(1000, 250)), 1000u);  // 100% at the most
    EXPECT_EQ(rrl::lease_most(l(5, 10)), 1u);         // 0.5: at least 1
    EXPECT_EQ(rrl::lease_most(l(999, 33)), 329u);     // rounded down

    const std::uint64_t edge = UINT64_MAX / 100;
    EXPECT_EQ(rrl::lease_most(l(edge, 100)), edge);
    EXPECT_EQ(rrl::lease_most(l(edge + 1, 100)), edge + 1);
    EXPECT_EQ(rrl::lease_most(l(edge + 1, 50)), (edge + 1) / 2);
    EXPECT_EQ(rrl::lease_most(l(UINT64_MAX, 10)), UINT64_MAX / 10);
    EXPECT_EQ(rrl::lease_most(l(UINT64_MAX, 100)), UINT64_MAX);
}

TEST(LeaseDecide, ConsumesTheCostAndAnswersAsTheScript) {
    rrl_lease_limit_t l = sw1000(3);
    rrl_lease_entry_t e = alive(l, 50);
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1] = {7};

    ASSERT_EQ(rrl::lease_decide(&l, entries, 1, kNow + 100 * kMs, kRenewTimeout,
                                results, renew),
              1);
    EXPECT_EQ(e.units, 47u);
    EXPECT_EQ(e.used, 13u);
    EXPECT_EQ(e.seen_cur, 3u);
    EXPECT_EQ(results[0].passed, 1);
    EXPECT_EQ(results[0].remaining, 700 - 13);     // known - used
    EXPECT_EQ(results[0].reset_after_us, 700 * kMs);  // reset_end - now
    EXPECT_EQ(results[0].retry_after_us, 0);
    // 47 left, 3 units/s: this window's lease lasts, the next one's is
    // asked for ahead (ahead.hpp)
    EXPECT_EQ(renew[0], rrl::kLeaseRenewAhead);
}

TEST(LeaseDecide, ShownRemainingAndResetNeverBelowZero) {
    rrl_lease_limit_t l = sw1000(5);
    rrl_lease_entry_t e = alive(l, 50);
    e.known = 12;
    e.used = 10;
    e.reset_end_us = kNow - 1;
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1];

    ASSERT_EQ(
        rrl::lease_decide(&l, entries, 1, kNow, kRenewTimeout, results, renew),
        1);
    EXPECT_EQ(results[0].remaining, 0);
    EXPECT_EQ(results[0].reset_after_us, 0);
}

TEST(LeaseDecide, ShownRemainingNeverAboveWhatAPassLeaves) {
    // answers landed out of order: known counts more than the state holds
    rrl_lease_limit_t l = sw1000(5);  // capacity 1000
    rrl_lease_entry_t e = alive(l, 50);
    e.known = 1093;
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1];

    ASSERT_EQ(
        rrl::lease_decide(&l, entries, 1, kNow, kRenewTimeout, results, renew),
        1);
    EXPECT_EQ(results[0].remaining, 995);
}

TEST(LeaseDecide, TwoLimitsOneShortConsumesNothing) {
    rrl_lease_limit_t limits[] = {sw1000(2), fw100(2)};
    rrl_lease_entry_t a = alive(limits[0], 10);
    rrl_lease_entry_t b = alive(limits[1], 1);
    rrl_lease_entry_t a0 = a, b0 = b;
    rrl_lease_entry_t* entries[] = {&a, &b};
    rrl_limit_result_t results[2];
    int renew[2];

    EXPECT_EQ(rrl::lease_decide(limits, entries, 2, kNow, kRenewTimeout,
                                results, renew),
              0);
    EXPECT_TRUE(same_bytes(a, a0));
    EXPECT_TRUE(same_bytes(b, b0));

    // with enough on both, both are consumed, each in its own part
    b.units = 2;
    ASSERT_EQ(rrl::lease_decide(limits, entries, 2, kNow, kRenewTimeout,
                                results, renew),
              1);
    EXPECT_EQ(a.units, 8u);
    EXPECT_EQ(b.units, 0u);
    EXPECT_EQ(results[1].passed, 1);
    EXPECT_EQ(results[1].remaining, 98);  // 700 - 12, at most 100 - 2
}

TEST(LeaseDecide, AZoneTwiceOnOneKeyNeedsBothCosts) {
    rrl_lease_limit_t limits[] = {sw1000(2), sw1000(2)};
    rrl_lease_entry_t e = alive(limits[0], 3);
    rrl_lease_entry_t* entries[] = {&e, &e};
    rrl_limit_result_t results[2];
    int renew[2];

    EXPECT_EQ(rrl::lease_decide(limits, entries, 2, kNow, kRenewTimeout,
                                results, renew),
              0);
    EXPECT_EQ(e.units, 3u);
    e.units = 4;
    EXPECT_EQ(rrl::lease_decide(limits, entries, 2, kNow, kRenewTimeout,
                                results, renew),
              1);
    EXPECT_EQ(e.units, 0u);
}

TEST(LeaseDecide, AnEndedLeaseIsNotUsable) {
    rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l, 50);
    rrl_lease_entry_t e0 = e;
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1];

    EXPECT_EQ(rrl::lease_decide(&l, entries, 1, e.lease_end_us, kRenewTimeout,
                                results, renew),
              0);
    EXPECT_TRUE(same_bytes(e, e0));
    EXPECT_EQ(rrl::lease_decide(&l, entries, 1, e.lease_end_us - 1,
                                kRenewTimeout, results, renew),
              1);
}

TEST(LeaseDecide, AnotherZonesEntryOrNoneIsNotUsable) {
    rrl_lease_limit_t l = sw1000();
    rrl_limit_result_t results[1];
    int renew[1];

    for (int field = 0; field < 4; field++) {
        rrl_lease_entry_t e = alive(l, 50);
        if (field == 0) e.limit = 999;
        if (field == 1) e.period_ms = 2000;
        if (field == 2) e.burst = 1;
        if (field == 3) e.algorithm = RRL_FIXED_WINDOW;
        rrl_lease_entry_t e0 = e;
        rrl_lease_entry_t* entries[] = {&e};
        EXPECT_EQ(rrl::lease_decide(&l, entries, 1, kNow, kRenewTimeout,
                                    results, renew),
                  0)
            << field;
        EXPECT_TRUE(same_bytes(e, e0));
    }

    rrl_lease_entry_t* none[] = {nullptr};
    EXPECT_EQ(
        rrl::lease_decide(&l, none, 1, kNow, kRenewTimeout, results, renew), 0);
}

// The renewal's conditions: low water, demand before the end, none in flight.
class LeaseRenew : public ::testing::Test {
   protected:
    // 100 units/s seen this second, a lease alive for 500 ms more
    rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l, 0);

    int decide(std::int64_t now_us = kNow) {
        rrl_lease_entry_t* entries[] = {&e};
        rrl_limit_result_t results[1];
        int renew[1] = {7};
        EXPECT_EQ(rrl::lease_decide(&l, entries, 1, now_us, kRenewTimeout,
                                    results, renew),
                  1);
        return renew[0];
    }

    void SetUp() override {
        e.seen_cur = 99;
        // the next window's lease held already: renewals of this one's
        // alone (asking ahead: lease_ahead_test.cpp)
        e.next_units = 10;
        e.next_start_us = e.lease_end_us + 3 * kMs;
        e.next_end_us = e.next_start_us + kSecond;
    }
};

TEST_F(LeaseRenew, BelowFiftyMillisecondsOfDemand) {
    e.units = 5;  // 4 after: 100/s x 50 ms = 5
    EXPECT_EQ(decide(), 1);
    EXPECT_EQ(e.renewing_until_us, kNow + kRenewTimeout);
}

TEST_F(LeaseRenew, NotAboveIt) {
    e.units = 6;  // 5 after: not below 5
    EXPECT_EQ(decide(), 0);
    EXPECT_EQ(e.renewing_until_us, 0);
}

TEST_F(LeaseRenew, NotWhileOneIsInFlight) {
    e.units = 1;
    e.renewing_until_us = kNow + 1;
    EXPECT_EQ(decide(), 0);
    EXPECT_EQ(e.renewing_until_us, kNow + 1);

    // one in flight past its time is none
    e.units = 1;
    e.renewing_until_us = kNow;
    EXPECT_EQ(decide(), 1);
    EXPECT_EQ(e.renewing_until_us, kNow + kRenewTimeout);
}

TEST_F(LeaseRenew, NotWhenNoDemandIsExpectedBeforeTheEnd) {
    // 100/s x 5 ms to the end = 0.5 < 1: no further request is expected
    e.units = 1;
    EXPECT_EQ(decide(e.lease_end_us - 5 * kMs), 0);
    // 100/s x 20 ms = 2 >= 1 + 0 left
    e.units = 1;
    EXPECT_EQ(decide(e.lease_end_us - 20 * kMs), 1);
}

TEST_F(LeaseRenew, NotWhenWhatIsLeftLastsToTheEnd) {
    // 100/s, 2 left (below 5), 25 ms to go: 2.5 expected < 1 + 2
    e.units = 3;
    EXPECT_EQ(decide(e.lease_end_us - 25 * kMs), 0);
    // 40 ms to go: 4 >= 3
    e.units = 3;
    EXPECT_EQ(decide(e.lease_end_us - 40 * kMs), 1);
}

TEST_F(LeaseRenew, AlwaysAtZeroLeftWhenDemandIsExpected) {
    // 2/s: 0.1 units in 50 ms, yet none left; 2 x 0.5 s = 1 >= 1
    e.seen_cur = 1;
    e.units = 1;
    EXPECT_EQ(decide(), 1);
}

TEST_F(LeaseRenew, NotWhenTheServerHoldsTheLargestLease) {
    // 100/s x 50 ms = 5: low, but 10% of 1000 is held after this request
    e.seen_cur = 10000;
    e.units = 101;
    EXPECT_EQ(decide(), 0);
    e.units = 100;
    EXPECT_EQ(decide(), 1);
}

TEST_F(LeaseRenew, AtOneLeftWhenDemandIsExpected) {
    // 2/s: one unit left after this request, so that the next one is served
    // while the renewal is in flight (a client's next request does not race
    // it to Redis); 2 x 0.5 s = 1 < 1 + 1: none expected beyond the one left
    e.seen_cur = 1;
    e.units = 2;
    EXPECT_EQ(decide(), 0);
    // 10/s: 5 expected before the end, more than the one left
    e.seen_cur = 9;
    e.units = 2;
    EXPECT_EQ(decide(), 1);
    // two left after: not yet
    e.renewing_until_us = 0;
    e.units = 3;
    EXPECT_EQ(decide(), 0);
}

// --- want: sizing ---------------------------------------------------------

TEST(LeaseSize, FollowsTheRateOverASecond) {
    rrl_lease_limit_t l = lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, 100, 1);
    EXPECT_EQ(size_at(l, 0), 1u);  // at least 1
    EXPECT_EQ(size_at(l, 3), 3u);
    EXPECT_EQ(size_at(l, 500), 500u);
}

TEST(LeaseSize, CappedByThePercentOfTheCapacity) {
    // capacity 1000 + 200: 10% is 120
    rrl_lease_limit_t l = lease_limit(RRL_FIXED_WINDOW, 1000, 1000, 10, 1, 200);
    EXPECT_EQ(size_at(l, 500), 120u);
    EXPECT_EQ(size_at(l, 100), 100u);
    // token_bucket's capacity is the bucket
    rrl_lease_limit_t t = lease_limit(RRL_TOKEN_BUCKET, 1000, 1000, 1, 1, 300);
    EXPECT_EQ(size_at(t, 5000), 3u);
}

TEST(LeaseSize, AtLeastOneWhateverThePercent) {
    // 10% of 5 is 0.5
    rrl_lease_limit_t l = lease_limit(RRL_SLIDING_WINDOW, 5, 1000, 10, 1);
    EXPECT_EQ(size_at(l, 500), 1u);
    EXPECT_EQ(size_at(l, 0), 1u);
}

TEST(LeaseSize, OnlyTheTimeLeftInTheWindow) {
    rrl_lease_limit_t l = lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, 100, 1);
    EXPECT_EQ(size_at(l, 500, kWall + 900 * kMs), 50u);    // 100 ms left
    EXPECT_EQ(size_at(l, 500, kWall + 990 * kMs), 5u);     // 10 ms
    EXPECT_EQ(size_at(l, 500, kWall + 999 * kMs), 1u);     // 0.5, rounded up
    EXPECT_EQ(size_at(l, 500, kWall + 999999), 1u);        // 1 us
    EXPECT_EQ(size_at(l, 3, kWall + 700 * kMs), 1u);       // 0.9
    EXPECT_EQ(size_at(l, 500, kWall + 1000 * kMs), 500u);  // a new window

    // a long window: a second's demand at most
    rrl_lease_limit_t m = lease_limit(RRL_FIXED_WINDOW, 60000, 60000, 100, 1);
    EXPECT_EQ(size_at(m, 500, kWall + 2 * kSecond), 500u);
    EXPECT_EQ(size_at(m, 500, kWall + 59800 * kMs), 100u);
}

TEST(LeaseSize, TokenBucketLeasesLastOneHundredMilliseconds) {
    rrl_lease_limit_t t = lease_limit(RRL_TOKEN_BUCKET, 1000, 1000, 100, 1);
    EXPECT_EQ(size_at(t, 500), 50u);
    EXPECT_EQ(size_at(t, 500, kWall + 999 * kMs), 50u);  // no window
    EXPECT_EQ(size_at(t, 3), 1u);
    EXPECT_EQ(rrl::lease_left_us(t, kWall + 123), RRL_LEASE_TOKEN_BUCKET_US);
}

TEST(LeaseWant, AsksForTheCostAndTheSizeCountingTheDemand) {
    rrl_lease_limit_t l = sw1000(4);
    rrl_lease_entry_t e = alive(l, 2);
    e.seen_cur = 16;
    Want w = want_of(l, &e);
    EXPECT_EQ(e.seen_cur, 20u);
    EXPECT_EQ(w.want, 4u + 16u);  // sized on the demand before this one
    EXPECT_EQ(w.back, 0u);        // alive: nothing back, units kept
    EXPECT_EQ(w.back_at, 0);
    EXPECT_EQ(e.units, 2u);
}

TEST(LeaseWant, AServerHoldsAtMostTheLargestLease) {
    // sliding_window 1000r/s lease=10%: at most 100 held, 300/s seen
    rrl_lease_limit_t l = sw1000(2);
    rrl_lease_entry_t e = alive(l, 97);
    e.seen_cur = 300;
    EXPECT_EQ(want_of(l, &e).want, 2u + 3u);  // 3 more to 100
    e.units = 100;
    EXPECT_EQ(want_of(l, &e).want, 2u);  // the cost alone
    // an ended lease's units do not count
    e.units = 100;
    EXPECT_GT(want_of(l, &e, e.lease_end_us).want, 2u + 3u);
}

TEST(LeaseWant, AKeyNeverSeenAsksForOneMore) {
    rrl_lease_limit_t l = sw1000(3);
    Want w = want_of(l, nullptr);
    EXPECT_EQ(w.want, 4u);
    EXPECT_EQ(w.back, 0u);
    EXPECT_EQ(w.back_at, 0);

    rrl_lease_entry_t e{};  // new in the table
    w = want_of(l, &e);
    EXPECT_EQ(w.want, 4u);      // as none: sized on the demand before
    EXPECT_EQ(e.seen_cur, 0u);  // as none: counted from its next request
    EXPECT_EQ(e.limit, 1000u);  // now this zone's
    EXPECT_GE(e.end_us, kNow + kSecond);
}

TEST(LeaseWant, AnEndedLeaseGivesItsUnitsBack) {
    for (int algorithm : {RRL_SLIDING_WINDOW, RRL_TOKEN_BUCKET}) {
        rrl_lease_limit_t l = lease_limit(algorithm, 1000, 1000, 10, 1);
        rrl_lease_entry_t e = alive(l, 17);
        Want w = want_of(l, &e, e.lease_end_us);
        EXPECT_EQ(w.back, 17u) << algorithm;
        EXPECT_EQ(w.back_at, kWall - 200 * kMs) << algorithm;
        EXPECT_EQ(e.units, 0u) << algorithm;

        // once only
        w = want_of(l, &e, e.lease_end_us + 1);
        EXPECT_EQ(w.back, 0u) << algorithm;
        EXPECT_EQ(w.back_at, 0) << algorithm;
    }
}

TEST(LeaseWant, NotForFixedWindowWhoseWindowHasEnded) {
    rrl_lease_limit_t l = fw100();
    rrl_lease_entry_t e = alive(l, 17);
    Want w = want_of(l, &e, e.lease_end_us);
    EXPECT_EQ(w.back, 0u);
    EXPECT_EQ(w.back_at, 0);
    EXPECT_EQ(e.units, 0u);
}

TEST(LeaseWant, NotFromAnotherZonesEntry) {
    rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e =
        alive(lease_limit(RRL_SLIDING_WINDOW, 500, 1000, 10, 1), 17);
    e.seen_cur = 400;
    Want w = want_of(l, &e, e.lease_end_us);
    EXPECT_EQ(w.back, 0u);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(e.limit, 1000u);
    EXPECT_EQ(e.seen_cur, 1u);  // its demand was another zone's
}

TEST(LeaseWant, ARenewalCountsNoDemand) {
    rrl_lease_limit_t l = sw1000(0);
    rrl_lease_entry_t e = alive(l, 2);
    e.seen_cur = 40;
    Want w = want_of(l, &e);
    EXPECT_EQ(w.want, 40u);
    EXPECT_EQ(e.seen_cur, 40u);
}

// --- learn ----------------------------------------------------------------

TEST(LeaseLearn, ANewLease) {
    rrl_lease_limit_t l = sw1000(3);
    rrl_lease_entry_t e{};
    // Redis's 400, and the 20 of this grant held here
    rrl_limit_result_t r = passed(420, 900 * kMs);
    std::int64_t sent = kNow - 1 * kMs;

    EXPECT_EQ(rrl::lease_learn(l, &e, r, 23, 600 * kMs, kWall + 400 * kMs, sent,
                               kNow),
              RRL_LEASE_TAKEN);
    EXPECT_EQ(e.units, 20u);
    EXPECT_EQ(e.lease_end_us, sent + 600 * kMs - RRL_LEASE_MARGIN_US);
    EXPECT_EQ(e.taken_at_us, kWall + 400 * kMs);
    EXPECT_EQ(e.known, 420u);  // remaining after the grant + the units here
    EXPECT_EQ(e.used, 0u);
    EXPECT_EQ(e.reset_end_us, kNow + 900 * kMs);
    EXPECT_EQ(e.limit, 1000u);
    EXPECT_EQ(e.period_ms, 1000u);
    EXPECT_EQ(e.burst, l.burst);
    EXPECT_EQ(e.algorithm, RRL_SLIDING_WINDOW);
    EXPECT_EQ(e.end_us, e.lease_end_us);  // later than its demand's 2 s
}

TEST(LeaseLearn, AfterAnEndedLeaseANewOne) {
    rrl_lease_limit_t l = sw1000(1);
    rrl_lease_entry_t e = alive(l, 0);
    rrl_limit_result_t r = passed(10, 900 * kMs);
    std::int64_t now = e.lease_end_us;

    EXPECT_EQ(rrl::lease_learn(l, &e, r, 5, 100 * kMs, kWall, now - 10, now),
              RRL_LEASE_TAKEN);
    EXPECT_EQ(e.units, 4u);
    EXPECT_EQ(e.lease_end_us, now - 10 + 100 * kMs - RRL_LEASE_MARGIN_US);
    EXPECT_EQ(e.taken_at_us, kWall);
}

TEST(LeaseLearn, IntoALeaseAliveTheEarlierEnd) {
    rrl_lease_limit_t l = sw1000(2);
    rrl_lease_entry_t e = alive(l, 5);
    rrl_limit_result_t r = passed(310, 400 * kMs);  // 300 + this grant's 10
    std::int64_t end = e.lease_end_us;

    EXPECT_EQ(rrl::lease_learn(l, &e, r, 12, 800 * kMs, kWall + kSecond, kNow,
                               kNow + kMs),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.units, 15u);
    EXPECT_EQ(e.lease_end_us, end);               // the earlier
    EXPECT_EQ(e.taken_at_us, kWall - 200 * kMs);  // the first grant's
    EXPECT_EQ(e.known, 315u);
    EXPECT_EQ(e.used, 0u);
    EXPECT_EQ(e.reset_end_us, kNow + kMs + 400 * kMs);

    r = passed(200, 400 * kMs);
    EXPECT_EQ(rrl::lease_learn(l, &e, r, 2, 100 * kMs, kWall + kSecond, kNow,
                               kNow + kMs),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.units, 15u);
    EXPECT_EQ(e.lease_end_us, kNow + 100 * kMs - RRL_LEASE_MARGIN_US);
}

TEST(LeaseLearn, ARenewalEndsTheOneInFlight) {
    rrl_lease_limit_t l = sw1000(0);
    rrl_lease_entry_t e = alive(l, 1);
    e.renewing_until_us = kNow + kRenewTimeout;
    rrl_limit_result_t r = passed(300, 400 * kMs);

    EXPECT_EQ(
        rrl::lease_learn(l, &e, r, 30, 400 * kMs, kWall, kNow, kNow + kMs),
        RRL_LEASE_RENEWED);
    EXPECT_EQ(e.units, 31u);
    EXPECT_EQ(e.renewing_until_us, 0);

    // a request's grant leaves a renewal in flight as it is
    l.cost = 1;
    e.renewing_until_us = kNow + kRenewTimeout;
    EXPECT_EQ(rrl::lease_learn(l, &e, r, 3, 400 * kMs, kWall, kNow, kNow + kMs),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.units, 33u);
    EXPECT_EQ(e.renewing_until_us, kNow + kRenewTimeout);
}

TEST(LeaseLearn, AnotherZonesEntryStartsAgain) {
    rrl_lease_limit_t l = sw1000(1);
    rrl_lease_entry_t e =
        alive(lease_limit(RRL_SLIDING_WINDOW, 1000, 2000, 10, 1), 40);
    e.seen_cur = 300;
    rrl_limit_result_t r = passed(302, 400 * kMs);

    EXPECT_EQ(rrl::lease_learn(l, &e, r, 3, 400 * kMs, kWall, kNow, kNow),
              RRL_LEASE_TAKEN);
    EXPECT_EQ(e.units, 2u);
    EXPECT_EQ(e.period_ms, 1000u);
    EXPECT_EQ(e.seen_cur, 0u);
    EXPECT_EQ(e.known, 302u);
}

TEST(LeaseLearn, ARefusalChangesNothingButTheRenewal) {
    rrl_lease_limit_t l = sw1000(0);
    rrl_lease_entry_t e = alive(l, 1);
    e.renewing_until_us = kNow + kRenewTimeout;
    rrl_limit_result_t r = {0, 0, 400 * kMs, 100 * kMs};
    rrl_lease_entry_t e0 = e;
    e0.renewing_until_us = 0;

    EXPECT_EQ(rrl::lease_learn(l, &e, r, 0, 0, kWall, kNow, kNow),
              RRL_LEASE_REFUSED);
    EXPECT_TRUE(same_bytes(e, e0));
}

TEST(LeaseRenewal, FailedEndsTheOneInFlight) {
    rrl_lease_entry_t e = alive(sw1000(), 1);
    e.renewing_until_us = kNow + kRenewTimeout;
    rrl_lease_entry_t e0 = e;
    e0.renewing_until_us = 0;
    rrl::lease_renewal_failed(&e);
    EXPECT_TRUE(same_bytes(e, e0));
}

// --- demand ---------------------------------------------------------------

TEST(LeaseDemand, SecondsRollOver) {
    rrl_lease_entry_t e{};
    e.seen_since_us = kNow;
    e.seen_cur = 100;
    e.seen_prev = 40;

    rrl::lease_roll(&e, kNow + kSecond - 1);  // the same second
    EXPECT_EQ(e.seen_cur, 100u);
    EXPECT_EQ(e.seen_prev, 40u);
    EXPECT_EQ(e.seen_since_us, kNow);

    rrl::lease_roll(&e, kNow + kSecond + 300 * kMs);  // the next
    EXPECT_EQ(e.seen_cur, 0u);
    EXPECT_EQ(e.seen_prev, 100u);
    EXPECT_EQ(e.seen_since_us, kNow + kSecond);

    rrl::lease_roll(&e, kNow + 3 * kSecond);  // two later: nothing seen
    EXPECT_EQ(e.seen_cur, 0u);
    EXPECT_EQ(e.seen_prev, 0u);
    EXPECT_EQ(e.seen_since_us, kNow + 3 * kSecond);
}

TEST(LeaseDemand, TheSecondBeforeWeighsWhatIsLeftOfIt) {
    rrl_lease_entry_t e{};
    e.seen_since_us = kNow;
    e.seen_prev = 100;
    e.seen_cur = 10;
    // units/s x 1,000,000, as 64 bits for gtest
    auto rate = [&](std::int64_t now_us) {
        return static_cast<std::uint64_t>(rrl::lease_rate(e, now_us));
    };

    EXPECT_EQ(rate(kNow), 110000000u);
    EXPECT_EQ(rate(kNow + 250 * kMs), 85000000u);
    EXPECT_EQ(rate(kNow + 250 * kMs + 1), 84999900u);  // exact
    // a second later, the 10 are the second before, weighed 0.5
    EXPECT_EQ(rate(kNow + 1500 * kMs), 5000000u);
    EXPECT_EQ(rate(kNow + 2 * kSecond), 0u);
    EXPECT_EQ(e.seen_cur, 10u);  // the entry itself does not roll
}

TEST(LeaseDemand, DecidedRequestsCountAndKeepTheEntry) {
    rrl_lease_limit_t l = sw1000(2);
    rrl_lease_entry_t e = alive(l, 50);
    e.end_us = kNow;
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1];

    ASSERT_EQ(rrl::lease_decide(&l, entries, 1, kNow + 1200 * kMs,
                                kRenewTimeout, results, renew),
              0);  // ended at kNow + 500 ms
    e.lease_end_us = kNow + 1300 * kMs;
    ASSERT_EQ(rrl::lease_decide(&l, entries, 1, kNow + 1200 * kMs,
                                kRenewTimeout, results, renew),
              1);
    EXPECT_EQ(e.seen_cur, 2u);
    EXPECT_EQ(e.seen_since_us, kNow + kSecond);
    EXPECT_EQ(e.end_us, kNow + 3 * kSecond);
}

TEST(LeaseDemand, HugeCountsSaturate) {
    constexpr std::uint64_t kMax = UINT64_MAX;
    rrl_lease_limit_t l = lease_limit(RRL_FIXED_WINDOW, kMax / 2, 86400000, 100,
                                      kMax / 2, kMax / 2);
    rrl_lease_entry_t e = alive(l, kMax / 2);
    e.lease_end_us = kNow + 3000 * kSecond * 1000;
    e.seen_cur = kMax - 1;
    e.known = kMax;
    e.used = 0;
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    int renew[1];

    ASSERT_EQ(
        rrl::lease_decide(&l, entries, 1, kNow, kRenewTimeout, results, renew),
        1);
    EXPECT_EQ(e.seen_cur, kMax);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(results[0].remaining, INT64_MAX);
    EXPECT_EQ(renew[0], 1);  // rate x time left, saturated, is >= 1

    // a second's demand at most, the whole capacity at most
    EXPECT_EQ(want_of(l, &e).want, kMax);
}

}  // namespace
