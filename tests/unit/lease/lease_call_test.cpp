// The lease rules on a request's call limits (lease_call.hpp): what is
// decided from leases, what a call to Redis asks for, and Redis's answers.
#include "lease/lease_call.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/support/call_limit.hpp"

namespace {

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kNow = 5000 * 1000 * kMs;
constexpr std::int64_t kWall = std::int64_t{1699999980} * 1000 * kMs;
constexpr std::int64_t kTimeout = 300 * kMs;

// sliding_window 1000r/s, lease=10%
rrl_call_limit_t lease_limit(std::uint64_t cost = 1) {
    rrl_call_limit_t l =
        rrl_test::call_limit("z", RRL_SLIDING_WINDOW, 1000, 1000, 0);
    l.lease = 10;
    l.cost = cost;
    return l;
}

// the entry of a lease of l's zone, alive for 500 ms more
rrl_lease_entry_t alive(const rrl_call_limit_t& l, std::uint64_t units) {
    rrl_lease_entry_t e{};
    e.end_us = kNow + 2000 * kMs;
    e.lease_end_us = kNow + 500 * kMs;
    e.units = units;
    e.known = 500;
    e.seen_since_us = kNow;
    e.limit = l.limit;
    e.period_ms = l.period_ms;
    e.burst = l.burst;
    e.algorithm = l.algorithm;
    return e;
}

struct Check {
    int rc;
    std::vector<rrl_limit_result_t> results;
    rrl_decision_t decision;
    std::vector<std::uint64_t> renew;
};

Check check(std::vector<rrl_call_limit_t>& l,
            std::vector<rrl_lease_entry_t*> entries, int ask = 0) {
    Check c{0, std::vector<rrl_limit_result_t>(l.size(), {-7, -7, -7, -7}),
            {}, std::vector<std::uint64_t>(l.size(), 99)};
    c.rc = rrl::lease_call_check(l.data(), entries.data(), l.size(), ask != 0,
                                 kNow, kWall, kTimeout, c.results.data(),
                                 &c.decision, c.renew.data());
    return c;
}

}  // namespace

TEST(LeaseCallCheck, NoLeaseLimitIsNone) {
    std::vector<rrl_call_limit_t> l = {
        rrl_test::call_limit("z", RRL_FIXED_WINDOW, 10, 1000, 0)};
    EXPECT_EQ(check(l, {nullptr}).rc, RRL_LEASE_NONE);
}

TEST(LeaseCallCheck, DecidedFromTheLeaseAsTheScriptWouldReply) {
    std::vector<rrl_call_limit_t> l = {lease_limit()};
    rrl_lease_entry_t e = alive(l[0], 10);
    Check c = check(l, {&e});
    ASSERT_EQ(c.rc, RRL_LEASE_DECIDED);
    EXPECT_EQ(e.units, 9u);
    EXPECT_EQ(c.decision.passed, 1);
    EXPECT_EQ(c.decision.now_us, kWall);
    EXPECT_EQ(c.results[0].passed, 1);
    EXPECT_EQ(c.results[0].remaining, 499);  // known - used
    EXPECT_EQ(c.decision.remaining, 499);
    EXPECT_EQ(c.renew[0], 0u);
}

// a settlement's T of a limit decided from its lease: the lease's
// taken_at_us; a request sent to Redis gets Redis's now later
TEST(LeaseCallCheck, DecidedSetsTheSettlementsTime) {
    std::vector<rrl_call_limit_t> l = {lease_limit(), lease_limit()};
    l[1].zone = "y";
    rrl_lease_entry_t e = alive(l[0], 10), f = alive(l[1], 10);
    e.taken_at_us = kWall - 300 * kMs;
    f.taken_at_us = kWall - 100 * kMs;
    ASSERT_EQ(check(l, {&e, &f}).rc, RRL_LEASE_DECIDED);
    EXPECT_EQ(l[0].settle_at_us, kWall - 300 * kMs);
    EXPECT_EQ(l[1].settle_at_us, kWall - 100 * kMs);

    std::vector<rrl_call_limit_t> ask = {lease_limit(20)};
    ask[0].settle_at_us = -5;
    ASSERT_EQ(check(ask, {&e}).rc, RRL_LEASE_NONE);
    ASSERT_EQ(check(ask, {&e}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(ask[0].settle_at_us, -5);  // untouched
}

TEST(LeaseCallCheck, ARenewalWantsItsSize) {
    std::vector<rrl_call_limit_t> l = {lease_limit()};
    rrl_lease_entry_t e = alive(l[0], 2);  // one left after: renewed
    e.seen_cur = 99;                       // 100/s
    Check c = check(l, {&e});
    ASSERT_EQ(c.rc, RRL_LEASE_DECIDED);
    EXPECT_GE(c.renew[0], 1u);
    EXPECT_LE(c.renew[0], 100u);  // at most 10% of 1000
    EXPECT_EQ(e.renewing_until_us, kNow + kTimeout);
}

TEST(LeaseCallCheck, NotEnoughAsksRedisForTheCostAndALease) {
    std::vector<rrl_call_limit_t> l = {lease_limit(3)};
    rrl_lease_entry_t e = alive(l[0], 2);
    Check c = check(l, {&e}, 1);
    ASSERT_EQ(c.rc, RRL_LEASE_ASK);
    EXPECT_EQ(e.units, 2u);  // a lease alive keeps its units
    EXPECT_GE(l[0].lease_want, 4u);
    EXPECT_EQ(l[0].lease_back, 0u);
    // the first to ask for more than its cost: one such grant in flight
    EXPECT_EQ(e.renewing_until_us, kNow + kTimeout);
}

TEST(LeaseCallCheck, WhileAGrantIsInFlightAskOnlyForTheCost) {
    std::vector<rrl_call_limit_t> l = {lease_limit(3)};
    rrl_lease_entry_t e = alive(l[0], 0);
    e.renewing_until_us = kNow + 1;
    Check c = check(l, {&e}, 1);
    ASSERT_EQ(c.rc, RRL_LEASE_ASK);
    EXPECT_EQ(l[0].lease_want, 3u);
    EXPECT_EQ(e.renewing_until_us, kNow + 1);
}

// issue 25: such a request is never decided from leases (every limit must
// hold units): a lease it took would be units no request of its location
// uses. It asks for its cost alone, holds no grant in flight, counts no
// demand, and gives an ended lease's units back with its call.
TEST(LeaseCallCheck, AnExactLimitSendsTheRequestToRedisForItsCostAlone) {
    std::vector<rrl_call_limit_t> l = {
        lease_limit(), rrl_test::call_limit("x", RRL_FIXED_WINDOW, 5, 1000, 0)};
    rrl_lease_entry_t e = alive(l[0], 10);
    EXPECT_EQ(check(l, {&e, nullptr}, 0).rc, RRL_LEASE_NONE);
    Check c = check(l, {&e, nullptr}, 1);
    ASSERT_EQ(c.rc, RRL_LEASE_ASK);
    EXPECT_EQ(e.units, 10u);  // nothing taken from the lease
    EXPECT_EQ(l[0].lease_want, 1u);
    EXPECT_EQ(l[0].lease_back, 0u);
    EXPECT_EQ(l[1].lease_want, 0u);
    EXPECT_EQ(e.renewing_until_us, 0);
    EXPECT_EQ(e.seen_cur, 0u);

    // several lease limits beside the exact one: each its cost alone
    std::vector<rrl_call_limit_t> m = {lease_limit(2), l[1], lease_limit(3)};
    m[2].zone = "y";
    rrl_lease_entry_t f = alive(m[2], 10);
    ASSERT_EQ(check(m, {&e, nullptr, &f}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(m[0].lease_want, 2u);
    EXPECT_EQ(m[2].lease_want, 3u);
    EXPECT_EQ(f.renewing_until_us, 0);

    // an ended lease's units (another location's) go back with the call
    e.lease_end_us = kNow;
    e.taken_at_us = kWall - 900 * kMs;
    check(l, {&e, nullptr}, 1);
    EXPECT_EQ(l[0].lease_want, 1u);
    EXPECT_EQ(l[0].lease_back, 10u);
    EXPECT_EQ(l[0].lease_back_at, kWall - 900 * kMs);
    EXPECT_EQ(e.units, 0u);
}

// the same class: a cost over the largest lease (10% of 1000 here) is
// never decided from a lease (a server holds at most that much)
TEST(LeaseCallCheck, ACostOverTheLargestLeaseAsksForItselfAlone) {
    std::vector<rrl_call_limit_t> l = {lease_limit(101)};
    rrl_lease_entry_t e = alive(l[0], 100);
    ASSERT_EQ(check(l, {&e}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(l[0].lease_want, 101u);
    EXPECT_EQ(e.renewing_until_us, 0);
    std::vector<rrl_call_limit_t> m = {lease_limit(100)};
    rrl_lease_entry_t f = alive(m[0], 10);
    ASSERT_EQ(check(m, {&f}, 1).rc, RRL_LEASE_ASK);
    EXPECT_GT(m[0].lease_want, 100u);
}

// issue 25: asking is after the deny cache, which may answer the request
// without a call: a check without ask takes nothing back and marks nothing
TEST(LeaseCallCheck, AskOnlyAsksAndAnEndedLeaseWaitsForIt) {
    std::vector<rrl_call_limit_t> l = {lease_limit(1)};
    rrl_lease_entry_t e = alive(l[0], 4);
    e.lease_end_us = kNow;
    e.taken_at_us = kWall - 900 * kMs;
    rrl_lease_entry_t before = e;
    EXPECT_EQ(check(l, {&e}, 0).rc, RRL_LEASE_NONE);
    EXPECT_EQ(std::memcmp(&e, &before, sizeof e), 0);
    EXPECT_EQ(l[0].lease_back, 0u);

    ASSERT_EQ(check(l, {&e}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(l[0].lease_back, 4u);
    EXPECT_EQ(e.units, 0u);
    EXPECT_GE(l[0].lease_want, 2u);
    EXPECT_EQ(e.renewing_until_us, kNow + kTimeout);

    // with units usable, asking still asks (a request the deny cache
    // declined after its leases did)
    rrl_lease_entry_t g = alive(l[0], 4);
    ASSERT_EQ(check(l, {&g}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(g.units, 4u);
}

TEST(LeaseCallCheck, WithoutAskNothingChangesWhenNotDecided) {
    std::vector<rrl_call_limit_t> l = {lease_limit(3)};
    rrl_lease_entry_t e = alive(l[0], 2);
    rrl_lease_entry_t before = e;
    Check c = check(l, {&e}, 0);
    EXPECT_EQ(c.rc, RRL_LEASE_NONE);
    EXPECT_EQ(l[0].lease_want, 0u);
    EXPECT_EQ(e.units, before.units);
    EXPECT_EQ(e.seen_cur, before.seen_cur);
    EXPECT_EQ(e.renewing_until_us, before.renewing_until_us);
    // and decided when the units are there
    e.units = 3;
    EXPECT_EQ(check(l, {&e}, 0).rc, RRL_LEASE_DECIDED);
    EXPECT_EQ(e.units, 0u);
}

TEST(LeaseCallLearn, AGrantEndsTheOneInFlight) {
    rrl_call_limit_t l = lease_limit(1);
    l.lease_want = 5;
    l.lease_granted = 5;
    l.lease_ttl_us = 400 * kMs;
    rrl_lease_entry_t e = alive(l, 0);
    e.renewing_until_us = kNow + kTimeout;
    rrl_limit_result_t r{1, 104, 900 * kMs, 0};
    EXPECT_EQ(rrl::lease_call_learn(l, &r, RRL_LEASE_CALL_PASSED, &e, kWall,
                                    kNow, kNow),
              RRL_LEASE_RENEWED);
    EXPECT_EQ(e.units, 4u);
    EXPECT_EQ(e.renewing_until_us, 0);
}

TEST(LeaseCallLearn, ARefusalAndAFailure) {
    rrl_call_limit_t l = lease_limit(0);
    l.lease_want = 3;  // a renewal
    rrl_lease_entry_t e = alive(l, 3);
    e.renewing_until_us = kNow + kTimeout;
    rrl_limit_result_t r{0, 0, 900 * kMs, 100 * kMs};
    EXPECT_EQ(rrl::lease_call_learn(l, &r, RRL_LEASE_CALL_REJECTED, &e, kWall,
                                    kNow, kNow),
              RRL_LEASE_REFUSED);
    EXPECT_EQ(e.renewing_until_us, 0);
    EXPECT_EQ(e.units, 3u);

    e.renewing_until_us = kNow + kTimeout;
    EXPECT_EQ(rrl::lease_call_learn(l, nullptr, RRL_LEASE_CALL_FAILED, &e, 0,
                                    kNow, kNow),
              -1);
    EXPECT_EQ(e.renewing_until_us, 0);
}

// issue 25 (R3): Redis passed the lease limit, another limit rejected the
// request: nothing was committed, nothing is learned, and the grant in
// flight is over (it was: the key's requests asked for their cost alone
// until the timeout + 1 s)
TEST(LeaseCallLearn, ARequestAnotherLimitRejectedEndsItsGrant) {
    rrl_call_limit_t l = lease_limit(1);
    l.lease_want = 6;
    l.lease_granted = 0;  // not committed: the decoder's 0
    rrl_lease_entry_t e = alive(l, 0);
    e.renewing_until_us = kNow + kTimeout;
    e.owed = 4;
    rrl_lease_entry_t before = e;
    rrl_limit_result_t r{1, 500, 900 * kMs, 0};
    EXPECT_EQ(rrl::lease_call_learn(l, &r, RRL_LEASE_CALL_REJECTED, &e, kWall,
                                    kNow, kNow),
              -1);
    EXPECT_EQ(e.renewing_until_us, 0);
    EXPECT_EQ(e.owed, 0u);
    e.renewing_until_us = before.renewing_until_us;
    e.owed = before.owed;
    EXPECT_EQ(std::memcmp(&e, &before, sizeof e), 0);
}

// a call that asked for its cost alone (another's grant in flight) does not
// end that grant, nor take the debt it owes, whatever its end
TEST(LeaseCallLearn, ACallForItsCostAloneLeavesTheGrantInFlight) {
    rrl_call_limit_t l = lease_limit(2);
    l.lease_want = 2;
    l.lease_granted = 2;
    l.lease_ttl_us = 400 * kMs;
    rrl_limit_result_t passed{1, 500, 900 * kMs, 0};
    rrl_limit_result_t refused{0, 0, 900 * kMs, 100 * kMs};
    for (int how : {RRL_LEASE_CALL_UNSENT, RRL_LEASE_CALL_FAILED,
                    RRL_LEASE_CALL_REJECTED, RRL_LEASE_CALL_PASSED}) {
        for (rrl_limit_result_t* r : {&passed, &refused}) {
            if (how == RRL_LEASE_CALL_PASSED && r == &refused) continue;
            rrl_lease_entry_t e = alive(l, 5);
            e.renewing_until_us = kNow + kTimeout;
            e.owed = 3;
            rrl::lease_call_learn(l, r, how, &e, kWall, kNow, kNow);
            EXPECT_EQ(e.renewing_until_us, kNow + kTimeout) << how;
            EXPECT_EQ(e.owed, 3u) << how;
            EXPECT_EQ(e.units, 5u) << how;
        }
    }
}

// issue 25 (R2): the entry was dropped (LRU, the table full) while the
// call's grant was in flight, and made anew when it landed: a debt it owed
// went with the old entry, so its extra units lapse (strict); its cost is
// the request's. A key never seen has its entry made when the call asks.
TEST(LeaseCallLearn, AGrantWhoseEntryWasDroppedKeepsNoExtraUnits) {
    std::vector<rrl_call_limit_t> l = {lease_limit(1)};
    rrl_lease_entry_t fresh{};
    ASSERT_EQ(check(l, {&fresh}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(l[0].lease_want, 2u);  // a key never seen: cost + 1
    EXPECT_EQ(fresh.renewing_until_us, kNow + kTimeout);
    l[0].lease_granted = 2;
    l[0].lease_ttl_us = 400 * kMs;
    rrl_limit_result_t r{1, 100, 900 * kMs, 0};
    rrl_lease_entry_t kept = fresh;
    rrl::lease_call_learn(l[0], &r, RRL_LEASE_CALL_PASSED, &kept, kWall, kNow,
                          kNow);
    EXPECT_EQ(kept.units, 1u);

    rrl_lease_entry_t dropped{};  // made anew when the grant landed
    rrl::lease_call_learn(l[0], &r, RRL_LEASE_CALL_PASSED, &dropped, kWall,
                          kNow, kNow);
    EXPECT_EQ(dropped.units, 0u);
    EXPECT_EQ(dropped.renewing_until_us, 0);
}

// issue 25: a call never sent gave nothing back: the ended lease's units
// are the entry's again (the next call gives them back), and its grant is
// no longer in flight; one that failed may have been done: nothing back
TEST(LeaseCallLearn, ACallNeverSentGivesTheUnitsBackToTheEntry) {
    std::vector<rrl_call_limit_t> l = {lease_limit(1)};
    rrl_lease_entry_t e = alive(l[0], 4);
    e.lease_end_us = kNow;
    e.taken_at_us = kWall - 900 * kMs;
    ASSERT_EQ(check(l, {&e}, 1).rc, RRL_LEASE_ASK);
    ASSERT_EQ(e.units, 0u);
    ASSERT_EQ(e.renewing_until_us, kNow + kTimeout);

    rrl_lease_entry_t failed = e;
    EXPECT_EQ(rrl::lease_call_learn(l[0], nullptr, RRL_LEASE_CALL_UNSENT, &e, 0,
                                    kNow, kNow),
              -1);
    EXPECT_EQ(e.units, 4u);
    EXPECT_EQ(e.renewing_until_us, 0);
    // and the next call gives them back
    ASSERT_EQ(check(l, {&e}, 1).rc, RRL_LEASE_ASK);
    EXPECT_EQ(l[0].lease_back, 4u);

    rrl::lease_call_learn(l[0], nullptr, RRL_LEASE_CALL_FAILED, &failed, 0,
                          kNow, kNow);
    EXPECT_EQ(failed.units, 0u);
    EXPECT_EQ(failed.renewing_until_us, 0);

    // another lease since: its units are not these
    e.units = 0;
    e.taken_at_us = kWall;
    rrl::lease_call_learn(l[0], nullptr, RRL_LEASE_CALL_UNSENT, &e, 0, kNow,
                          kNow);
    EXPECT_EQ(e.units, 0u);
}

// lease_call_settle(): a refund goes back into the lease that decided the
// limit while it is alive; a charge takes what any lease of the key alive
// holds, the rest to Redis.
namespace {

// 1: settled in the entry, 0: the rest to Redis
int settle(rrl_lease_entry_t* entry, rrl_call_limit_t& limit,
           std::int64_t now_us) {
    return rrl::lease_call_settle(entry, limit, now_us) ? 1 : 0;
}

rrl_call_limit_t settling(std::uint64_t e, std::uint64_t a) {
    rrl_call_limit_t l = lease_limit(e);
    l.settle_actual = a;
    l.settle_at_us = kWall - 200 * kMs;
    return l;
}

rrl_lease_entry_t taken(const rrl_call_limit_t& l, std::uint64_t units) {
    rrl_lease_entry_t e = alive(l, units);
    e.taken_at_us = kWall - 200 * kMs;
    e.used = 150;
    return e;
}

}  // namespace

TEST(LeaseSettle, ARefundGoesBackIntoTheLease) {
    rrl_call_limit_t l = settling(100, 30);
    rrl_lease_entry_t e = taken(l, 5);
    EXPECT_EQ(settle(&e, l, kNow), 1);
    EXPECT_EQ(e.units, 75u);
    EXPECT_EQ(e.used, 80u);
    // used never below 0
    e.used = 10;
    EXPECT_EQ(settle(&e, l, kNow), 1);
    EXPECT_EQ(e.units, 145u);
    EXPECT_EQ(e.used, 0u);
}

TEST(LeaseSettle, AChargeTakesWhatTheLeaseHolds) {
    rrl_call_limit_t l = settling(10, 50);
    rrl_lease_entry_t e = taken(l, 40);
    EXPECT_EQ(settle(&e, l, kNow), 1);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(e.used, 190u);
    EXPECT_EQ(l.settle_actual, 10u);  // all of D taken: A == E
    // not enough left: what it holds, the rest (D - k) to Redis
    l = settling(10, 50);
    e.units = 39;
    EXPECT_EQ(settle(&e, l, kNow), 0);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(e.used, 229u);
    EXPECT_EQ(l.settle_actual, 11u);
    // none left: nothing changed
    EXPECT_EQ(settle(&e, l, kNow), 0);
    EXPECT_EQ(l.settle_actual, 11u);
    EXPECT_EQ(e.used, 229u);
    // nothing to settle: settled
    rrl_call_limit_t same = settling(10, 10);
    EXPECT_EQ(settle(&e, same, kNow), 1);
    EXPECT_EQ(e.units, 0u);
}

// a charge of a request Redis decided takes from any lease of the key
// alive: its units are counted in Redis already, using them up is exact
TEST(LeaseSettle, AChargeTakesFromAnyLeaseAlive) {
    rrl_call_limit_t l = settling(100, 130);
    rrl_lease_entry_t e = taken(l, 120);
    e.taken_at_us = kWall;  // another lease than the charge's
    EXPECT_EQ(settle(&e, l, kNow), 1);
    EXPECT_EQ(e.units, 90u);
    EXPECT_EQ(e.used, 180u);
    // but not an ended one, nor another zone's
    l = settling(100, 130);
    EXPECT_EQ(settle(&e, l, e.lease_end_us), 0);
    e.limit = 999;
    EXPECT_EQ(settle(&e, l, kNow), 0);
    EXPECT_EQ(e.units, 90u);
    EXPECT_EQ(l.settle_actual, 130u);
}

// A charge the lease cannot cover goes to Redis; a grant in flight for
// the key then was counted before it, so the units it brings are owed
// that much: taken out when it lands (strict: never one request more
// than the exact mode lets pass, t/settle_lease.t).
TEST(LeaseSettle, AGrantInFlightOwesTheDebtSentToRedis) {
    rrl_call_limit_t l = settling(100, 130);
    rrl_lease_entry_t e = taken(l, 10);
    e.renewing_until_us = kNow + 1000;
    EXPECT_EQ(settle(&e, l, kNow), 0);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(l.settle_actual, 120u);  // 20 to Redis
    EXPECT_EQ(e.owed, 20u);

    // the grant lands: 50 more, 20 of them owed
    rrl_call_limit_t renewal = l;
    renewal.cost = 0;
    renewal.lease_want = 50;
    renewal.lease_granted = 50;
    renewal.lease_ttl_us = 1000000;
    rrl_limit_result_t passed{1, 500, 1000, 0};
    rrl::lease_call_learn(renewal, &passed, RRL_LEASE_CALL_PASSED, &e, kWall,
                          kNow, kNow + 10);
    EXPECT_EQ(e.units, 30u);
    EXPECT_EQ(e.owed, 0u);

    // nothing in flight: nothing owed, the rest to Redis alone
    l = settling(100, 200);
    EXPECT_EQ(settle(&e, l, kNow + 20), 0);
    EXPECT_EQ(e.units, 0u);
    EXPECT_EQ(e.owed, 0u);

    // a refusal or a failure of the grant in flight: nothing to take
    e.renewing_until_us = kNow + 1000;
    l = settling(100, 110);
    EXPECT_EQ(settle(&e, l, kNow + 30), 0);
    EXPECT_EQ(e.owed, 10u);
    rrl_limit_result_t refused{0, 0, 1000, 1000};
    rrl::lease_call_learn(renewal, &refused, RRL_LEASE_CALL_REJECTED, &e, kWall,
                          kNow, kNow + 40);
    EXPECT_EQ(e.owed, 0u);
}

TEST(LeaseSettle, OnlyInTheSameLeaseAlive) {
    rrl_call_limit_t l = settling(100, 30);
    rrl_lease_entry_t e = taken(l, 5);
    rrl_lease_entry_t before = e;

    // another lease since (taken at another time)
    e.taken_at_us = kWall;
    EXPECT_EQ(settle(&e, l, kNow), 0);
    // ended
    e = before;
    EXPECT_EQ(settle(&e, l, e.lease_end_us), 0);
    // another zone's numbers (a reload)
    e.limit = 999;
    EXPECT_EQ(settle(&e, l, kNow), 0);
    EXPECT_EQ(settle(nullptr, l, kNow), 0);
    e.limit = before.limit;
    EXPECT_EQ(e.units, before.units);
    EXPECT_EQ(e.used, before.used);
    EXPECT_EQ(settle(&e, l, e.lease_end_us - 1), 1);
}
