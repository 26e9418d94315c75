// ahead.hpp: leases taken ahead for the next window (fixed_window,
// sliding_window). A request decided from a lease in the second half of
// its window, with demand expected, has a worker ask for the next
// window's lease; its grant is kept apart until that window starts here,
// then becomes the entry's lease at the first look at it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/rrl_call_args_types.h"
#include "base/rrl_lease_types.h"
#include "lease/ahead.hpp"
#include "lease/lease.hpp"
#include "lease/lease_call.hpp"
#include "script/algorithm.hpp"
#include "tests/support/call_limit.hpp"

namespace {

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kSecond = 1000 * kMs;
constexpr std::int64_t kNow = 5000 * kSecond;  // a monotonic clock's time
constexpr std::int64_t kWall = std::int64_t{1699999980} * kSecond;
constexpr std::int64_t kRedisNow = kWall + 600 * kMs;  // 400 ms left
constexpr std::int64_t kRenewTimeout = 300 * kMs;
constexpr std::int64_t kMargin = RRL_LEASE_MARGIN_US;

rrl_lease_limit_t lease_limit(int algorithm, std::uint64_t limit,
                              std::uint64_t period_ms, std::uint64_t cost = 1) {
    rrl_lease_limit_t l{};
    l.algorithm = algorithm;
    l.limit = limit;
    l.period_ms = period_ms;
    l.burst = rrl::effective_burst(*rrl::algorithm(algorithm), limit,
                                   RRL_BURST_UNSET);
    l.percent = 10;
    l.cost = cost;
    return l;
}

// 1000r/s, lease=10%: the largest lease is 100
rrl_lease_limit_t sw1000(std::uint64_t cost = 1) {
    return lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, cost);
}

// An entry of l's zone: a lease alive until kNow + 400 ms (its window's
// end, less the margin), 50 units, 99 units seen this second.
rrl_lease_entry_t alive(const rrl_lease_limit_t& l) {
    rrl_lease_entry_t e{};
    e.end_us = kNow + 2 * kSecond;
    e.lease_end_us = kNow + 400 * kMs;
    e.units = 50;
    e.taken_at_us = kWall;
    e.known = 700;
    e.used = 10;
    e.reset_end_us = kNow + 900 * kMs;
    e.seen_cur = 99;
    e.seen_since_us = kNow;
    e.limit = l.limit;
    e.period_ms = l.period_ms;
    e.burst = l.burst;
    e.algorithm = l.algorithm;
    return e;
}

// an entry's lease ahead: units from start to end
void hold_next(rrl_lease_entry_t* e, std::uint64_t units, std::int64_t start,
               std::int64_t end) {
    e->next_units = units;
    e->next_start_us = start;
    e->next_end_us = end;
    e->next_taken_at_us = kWall + kSecond;
    e->next_known = 900;
    e->next_reset_end_us = end + 5 * kMs;
}

// lease_decide()'s renewal of one limit at now; -1: not decided
int renewal(const rrl_lease_limit_t& l, rrl_lease_entry_t* e,
            std::int64_t now) {
    rrl_lease_entry_t* entries[] = {e};
    rrl_limit_result_t results[1];
    int renew[1] = {7};
    if (rrl::lease_decide(&l, entries, 1, now, kRenewTimeout, results, renew) !=
        1) {
        return -1;
    }
    return renew[0];
}

}  // namespace

// --- asking -----------------------------------------------------------------

TEST(LeaseAheadAsk, InTheSecondHalfOfTheWindowWithDemand) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    EXPECT_EQ(renewal(l, &e, kNow), rrl::kLeaseRenewAhead);
    EXPECT_EQ(e.renewing_until_us, kNow + kRenewTimeout);
    // one in flight: none more
    EXPECT_EQ(renewal(l, &e, kNow + 10 * kMs), 0);

    e = alive(sw1000());
    e.lease_end_us = kNow + 500 * kMs;  // half the period left: not yet
    EXPECT_EQ(renewal(l, &e, kNow), 0);
    EXPECT_EQ(e.renewing_until_us, 0);
}

TEST(LeaseAheadAsk, NotTooLateForTheNextWindow) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    EXPECT_EQ(renewal(l, &e, e.lease_end_us - kMargin), 0);
    EXPECT_EQ(renewal(l, &e, e.lease_end_us - kMargin - 1),
              rrl::kLeaseRenewAhead);
}

TEST(LeaseAheadAsk, NotWhileOneIsHeld) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    hold_next(&e, 5, e.lease_end_us + 3 * kMs, e.lease_end_us + kSecond);
    EXPECT_EQ(renewal(l, &e, kNow), 0);
}

TEST(LeaseAheadAsk, OnlyForAWindowOfADayAtMost) {
    rrl_lease_limit_t tb = lease_limit(RRL_TOKEN_BUCKET, 1000, 1000);
    rrl_lease_entry_t e = alive(tb);
    e.lease_end_us = kNow + 50 * kMs;
    e.units = 1000;
    EXPECT_EQ(renewal(tb, &e, kNow), 0);

    const rrl_lease_limit_t day =
        lease_limit(RRL_FIXED_WINDOW, 86400, 86400000);
    e = alive(day);
    EXPECT_EQ(renewal(day, &e, kNow), rrl::kLeaseRenewAhead);
    const rrl_lease_limit_t more =
        lease_limit(RRL_FIXED_WINDOW, 86401, 86400001);
    e = alive(more);
    EXPECT_EQ(renewal(more, &e, kNow), 0);
}

// rate x min(1 s, period) >= 1: at 100 ms windows, 3 units/s is not
TEST(LeaseAheadAsk, OnlyWhenTheNextWindowHasDemand) {
    const rrl_lease_limit_t l = lease_limit(RRL_FIXED_WINDOW, 100, 100);
    rrl_lease_entry_t e = alive(l);
    e.lease_end_us = kNow + 30 * kMs;
    e.seen_cur = 2;  // 3 with this request
    EXPECT_EQ(renewal(l, &e, kNow), 0);
    e.seen_cur = 9;  // 10/s x 100 ms
    EXPECT_EQ(renewal(l, &e, kNow), rrl::kLeaseRenewAhead);
}

// the size of a lease taken at the window's start, rate x min(1 s,
// period), and one more, up to the largest lease
TEST(LeaseAheadAsk, TheSizeOfAWindowsStartAndOne) {
    const rrl::LeaseRate per_second = 1000000;
    EXPECT_EQ(rrl::lease_ahead_size(sw1000(), 30 * per_second), 31u);
    EXPECT_EQ(rrl::lease_ahead_size(sw1000(), 99 * per_second), 100u);
    EXPECT_EQ(rrl::lease_ahead_size(sw1000(), 500 * per_second), 100u);
    EXPECT_EQ(rrl::lease_ahead_size(sw1000(), 0), 2u);
    const rrl_lease_limit_t short_window =
        lease_limit(RRL_FIXED_WINDOW, 1000, 100);
    EXPECT_EQ(rrl::lease_ahead_size(short_window, 30 * per_second), 4u);
}

// lease_call_check(): the renewal's units, its limit marked as ahead
TEST(LeaseAheadAsk, TheCallLimitIsMarked) {
    rrl_call_limit_t c =
        rrl_test::call_limit("z", RRL_SLIDING_WINDOW, 1000, 1000, 0);
    c.lease = 10;
    c.cost = 1;
    rrl_lease_entry_t e = alive(sw1000());
    rrl_lease_entry_t* entries[] = {&e};
    rrl_limit_result_t results[1];
    rrl_decision_t decision{};
    std::uint64_t renew[1] = {99};
    ASSERT_EQ(rrl::lease_call_check(&c, entries, 1, false, kNow, kWall,
                                    kRenewTimeout, results, &decision, renew),
              RRL_LEASE_DECIDED);
    EXPECT_EQ(renew[0], 100u);  // 100 units/s
    EXPECT_EQ(c.lease_ahead, 1);
    EXPECT_EQ(e.units, 49u);

    // a call to Redis is never one
    ASSERT_EQ(rrl::lease_call_check(&c, entries, 1, true, kNow, kWall,
                                    kRenewTimeout, results, &decision, renew),
              RRL_LEASE_ASK);
    EXPECT_EQ(c.lease_ahead, 0);
}

// --- keeping ----------------------------------------------------------------

TEST(LeaseAheadLearn, KeptApartUntilTheNextWindow) {
    const rrl_lease_limit_t l = lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, 0);
    rrl_lease_entry_t e = alive(l);
    e.renewing_until_us = kNow + kRenewTimeout;
    e.owed = 3;
    const rrl_limit_result_t r{1, 900, 2400 * kMs, 0};  // decoded: 880 + 20
    EXPECT_EQ(rrl::lease_learn_ahead(l, &e, r, 20, 1400 * kMs, kRedisNow, kNow,
                                     kNow + kMs),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.next_units, 20u);
    EXPECT_EQ(e.next_start_us, kNow + kMs + 400 * kMs + kMargin);
    EXPECT_EQ(e.next_end_us, kNow + 1400 * kMs - kMargin);
    EXPECT_EQ(e.next_taken_at_us, kWall + kSecond);
    EXPECT_EQ(e.next_known, 900u);
    EXPECT_EQ(e.next_reset_end_us, kNow + kMs + 2400 * kMs);
    EXPECT_EQ(e.renewing_until_us, 0);
    EXPECT_EQ(e.owed, 0u);  // this window's debt: none of the next one's
    EXPECT_GE(e.end_us, e.next_end_us);
    // this window's lease as it was
    EXPECT_EQ(e.units, 50u);
    EXPECT_EQ(e.lease_end_us, kNow + 400 * kMs);
}

TEST(LeaseAheadLearn, ARefusalKeepsNone) {
    const rrl_lease_limit_t l = lease_limit(RRL_SLIDING_WINDOW, 1000, 1000, 0);
    rrl_lease_entry_t e = alive(l);
    e.renewing_until_us = kNow + kRenewTimeout;
    const rrl_limit_result_t r{0, 0, 2400 * kMs, 1400 * kMs};
    EXPECT_EQ(
        rrl::lease_learn_ahead(l, &e, r, 0, 0, kRedisNow, kNow, kNow + kMs),
        RRL_LEASE_REFUSED);
    EXPECT_EQ(e.next_units, 0u);
    EXPECT_EQ(e.renewing_until_us, 0);
}

// lease_call_learn(): a renewal ahead's reply goes there, and a dropped
// entry's (none in flight any more) keeps nothing
TEST(LeaseAheadLearn, ARenewalAheadsReply) {
    rrl_call_limit_t c =
        rrl_test::call_limit("z", RRL_SLIDING_WINDOW, 1000, 1000, 0);
    c.lease = 10;
    c.cost = 0;
    c.lease_want = 20;
    c.lease_ahead = 1;
    c.lease_granted = 20;
    c.lease_ttl_us = 1400 * kMs;
    rrl_lease_entry_t e = alive(sw1000());
    e.renewing_until_us = kNow + kRenewTimeout;
    const rrl_limit_result_t r{1, 900, 2400 * kMs, 0};
    EXPECT_EQ(rrl::lease_call_learn(c, &r, RRL_LEASE_CALL_PASSED, &e, kRedisNow,
                                    kNow, kNow + kMs),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.next_units, 20u);
    EXPECT_EQ(e.units, 50u);

    e = alive(sw1000());
    EXPECT_EQ(rrl::lease_call_learn(c, &r, RRL_LEASE_CALL_PASSED, &e, kRedisNow,
                                    kNow, kNow + kMs),
              -1);
    EXPECT_EQ(e.next_units, 0u);

    e = alive(sw1000());
    e.renewing_until_us = kNow + kRenewTimeout;
    EXPECT_EQ(rrl::lease_call_learn(c, nullptr, RRL_LEASE_CALL_FAILED, &e,
                                    kRedisNow, kNow, kNow + kMs),
              -1);
    EXPECT_EQ(e.renewing_until_us, 0);
    EXPECT_EQ(e.next_units, 0u);
}

// --- promotion --------------------------------------------------------------

TEST(LeaseAheadPromote, AtItsStartItIsTheLease) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    const std::int64_t start = e.lease_end_us + 5 * kMs;
    hold_next(&e, 20, start, start + kSecond);

    rrl_lease_entry_t before = e;
    rrl::lease_promote(l, &e, start - 1);
    EXPECT_EQ(e.next_units, 20u);
    EXPECT_EQ(e.units, before.units);

    rrl::lease_promote(l, &e, start);
    EXPECT_EQ(e.units, 20u);
    EXPECT_EQ(e.lease_end_us, start + kSecond);
    EXPECT_EQ(e.taken_at_us, kWall + kSecond);
    EXPECT_EQ(e.known, 900u);
    EXPECT_EQ(e.used, 0u);
    EXPECT_EQ(e.reset_end_us, start + kSecond + 5 * kMs);
    EXPECT_EQ(e.next_units, 0u);
    EXPECT_EQ(e.next_end_us, 0);
}

TEST(LeaseAheadPromote, AddedToALeaseOfItsWindowTakenBefore) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    const std::int64_t start = kNow + 10 * kMs;
    hold_next(&e, 20, start, start + kSecond);
    rrl::lease_promote(l, &e, start);  // the lease alive: until kNow + 400 ms
    EXPECT_EQ(e.units, 70u);
    EXPECT_EQ(e.known, 720u);
    EXPECT_EQ(e.lease_end_us, kNow + 400 * kMs);
    EXPECT_EQ(e.next_units, 0u);
}

TEST(LeaseAheadPromote, DroppedPastItsEndOrOfAnotherZone) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    hold_next(&e, 20, kNow, kNow + 10 * kMs);
    rrl::lease_promote(l, &e, kNow + 10 * kMs);
    EXPECT_EQ(e.next_units, 0u);
    EXPECT_EQ(e.units, 50u);

    hold_next(&e, 20, kNow, kNow + kSecond);
    rrl::lease_promote(lease_limit(RRL_SLIDING_WINDOW, 2000, 1000), &e, kNow);
    EXPECT_EQ(e.next_units, 0u);
    EXPECT_EQ(e.units, 50u);
}

// The first request of the next window is decided from it, and a call to
// Redis finds it the lease: nothing of the one before given back.
TEST(LeaseAheadPromote, TheNextWindowsFirstRequestsUseIt) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    const std::int64_t start = e.lease_end_us + 5 * kMs;
    hold_next(&e, 20, start, start + kSecond);
    EXPECT_EQ(renewal(l, &e, start - 1), -1);  // ended, not started yet
    EXPECT_NE(renewal(l, &e, start), -1);
    EXPECT_EQ(e.units, 19u);

    e = alive(l);
    hold_next(&e, 20, start, start + kSecond);
    std::uint64_t want = 0, back = 9;
    std::int64_t back_at = 9;
    rrl::lease_want(l, &e, start, kWall + kSecond, &want, &back, &back_at);
    EXPECT_EQ(back, 0u);
    EXPECT_EQ(back_at, 0);
    EXPECT_EQ(e.units, 20u);
}

// A settlement's charge takes from it once it is the lease.
TEST(LeaseAheadPromote, ASettlementFindsItTheLease) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    const std::int64_t start = e.lease_end_us + 5 * kMs;
    hold_next(&e, 20, start, start + kSecond);
    std::uint64_t actual = 4;
    EXPECT_TRUE(rrl::lease_settle(l, &e, 1, actual, kWall + kSecond, start));
    EXPECT_EQ(e.units, 17u);
}

// A grant of the window before, landing after the lease ahead became the
// lease (a call sent at that window's end, answered late): it ended on
// arrival, so its units lapse, and the lease alive (another window's)
// keeps its units, its end and its Redis time. Merged, both would have
// ended at once, and given back later, the older units would have left
// the newer window's count in Redis, which never held them.
TEST(LeaseAheadPromote, ALateGrantOfTheWindowBeforeLeavesItAlone) {
    const rrl_lease_limit_t l = sw1000();
    rrl_lease_entry_t e = alive(l);
    const std::int64_t start = e.lease_end_us + 5 * kMs;
    hold_next(&e, 20, start, start + kSecond);
    rrl::lease_promote(l, &e, start);
    ASSERT_EQ(e.units, 20u);

    // sent 12 ms before the window's end, that window's 12 ms as its life
    const std::int64_t sent = kNow + 390 * kMs;
    const rrl_limit_result_t r{1, 905, 12 * kMs, 0};
    EXPECT_EQ(rrl::lease_learn(l, &e, r, 6, 12 * kMs, kWall + 988 * kMs, sent,
                               start + kMs),
              RRL_LEASE_TAKEN);
    EXPECT_EQ(e.units, 20u);
    EXPECT_EQ(e.lease_end_us, start + kSecond);
    EXPECT_EQ(e.taken_at_us, kWall + kSecond);
    EXPECT_EQ(e.known, 900u);
    EXPECT_EQ(e.reset_end_us, start + kSecond + 5 * kMs);

    // a renewal's ends its flight all the same
    rrl_lease_limit_t renewal = l;
    renewal.cost = 0;
    e.renewing_until_us = start + kRenewTimeout;
    EXPECT_EQ(rrl::lease_learn(renewal, &e, r, 5, 12 * kMs, kWall + 988 * kMs,
                               sent, start + kMs),
              RRL_LEASE_TAKEN);
    EXPECT_EQ(e.units, 20u);
    EXPECT_EQ(e.renewing_until_us, 0);
}
