// The circuit breaker as a state machine (Breaker): every transition,
// and the paths by which a half-open probe used to be lost, so that the
// circuit never closed again: each must end as a success, a failure or an
// abandonment, and each of those leaves a state that closes once Redis
// answers.
#include "engine/breaker.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

constexpr std::int64_t kCooldown = 500;

rrl::Breaker fresh(std::uint64_t max_failures = 3) {
    return rrl::Breaker(max_failures, kCooldown);
}

// opened at t = 1000 by max_failures failures
rrl::Breaker opened() {
    rrl::Breaker b = fresh();
    for (int i = 0; i < 3; i++) b.failure(1000);
    EXPECT_EQ(b.state, rrl::BreakerState::open);
    return b;
}

// half open at t = 1500, its probe out
rrl::Breaker probing() {
    rrl::Breaker b = opened();
    EXPECT_EQ(b.allow(1000 + kCooldown), rrl::BreakerVerdict::probe);
    EXPECT_EQ(b.state, rrl::BreakerState::half_open);
    return b;
}

// the circuit closes once Redis answers: the next allowed call succeeds
void expect_recovers(rrl::Breaker b, std::int64_t from) {
    std::int64_t t = from;
    rrl::BreakerVerdict verdict = rrl::BreakerVerdict::refuse;
    for (; t < from + 10 * kCooldown; t += 10) {
        verdict = b.allow(t);
        if (verdict != rrl::BreakerVerdict::refuse) break;
    }
    ASSERT_NE(verdict, rrl::BreakerVerdict::refuse)
        << "never allows a call again";
    EXPECT_LE(t, from + kCooldown) << "within the cooldown";
    b.success();
    EXPECT_EQ(b.state, rrl::BreakerState::closed);
    EXPECT_EQ(b.allow(t), rrl::BreakerVerdict::call);
}

TEST(Breaker, ClosedAllowsEveryCall) {
    rrl::Breaker b = fresh();
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(b.allow(i), rrl::BreakerVerdict::call);
    EXPECT_EQ(b.state, rrl::BreakerState::closed);
}

// Only an open circuit's verdict depends on the time: closed and half
// open, allow() is asked without reading a clock.
TEST(Breaker, NeedsTheClockOnlyWhileOpen) {
    rrl::Breaker b(1, 100);
    EXPECT_FALSE(b.needs_clock());
    EXPECT_EQ(b.allow(0), rrl::BreakerVerdict::call);
    b.failure(1000);
    EXPECT_TRUE(b.needs_clock());
    EXPECT_EQ(b.allow(1050), rrl::BreakerVerdict::refuse);
    EXPECT_EQ(b.allow(1100), rrl::BreakerVerdict::probe);
    EXPECT_FALSE(b.needs_clock());  // half open: the probe is out
    EXPECT_EQ(b.allow(0), rrl::BreakerVerdict::refuse);
    b.success();
    EXPECT_FALSE(b.needs_clock());
}

TEST(Breaker, ClosedStaysClosedBelowMaxFailures) {
    rrl::Breaker b = fresh();
    EXPECT_EQ(b.failure(1), rrl::BreakerChange::none);
    EXPECT_EQ(b.failure(2), rrl::BreakerChange::none);
    EXPECT_EQ(b.state, rrl::BreakerState::closed);
    EXPECT_EQ(b.allow(3), rrl::BreakerVerdict::call);
}

TEST(Breaker, ASuccessResetsTheFailuresInARow) {
    rrl::Breaker b = fresh();
    b.failure(1);
    b.failure(2);
    EXPECT_EQ(b.success(), rrl::BreakerChange::none);
    b.failure(3);
    b.failure(4);
    EXPECT_EQ(b.state, rrl::BreakerState::closed);
}

TEST(Breaker, ClosedToOpenAtMaxFailures) {
    rrl::Breaker b = fresh();
    b.failure(1000);
    b.failure(1000);
    EXPECT_EQ(b.failure(1000), rrl::BreakerChange::opened);
    EXPECT_EQ(b.state, rrl::BreakerState::open);
    EXPECT_EQ(b.open_until_ms, 1000 + kCooldown);
}

TEST(Breaker, OpenRefusesUntilTheCooldownEnds) {
    rrl::Breaker b = opened();
    EXPECT_EQ(b.allow(1000), rrl::BreakerVerdict::refuse);
    EXPECT_EQ(b.allow(1000 + kCooldown - 1), rrl::BreakerVerdict::refuse);
    EXPECT_EQ(b.state, rrl::BreakerState::open);
}

TEST(Breaker, OpenToHalfOpenGrantsOneProbe) {
    rrl::Breaker b = opened();
    EXPECT_EQ(b.allow(1000 + kCooldown), rrl::BreakerVerdict::probe);
    EXPECT_EQ(b.state, rrl::BreakerState::half_open);
    EXPECT_EQ(b.allow(1000 + kCooldown), rrl::BreakerVerdict::refuse)
        << "one probe at a time";
    EXPECT_EQ(b.allow(99999), rrl::BreakerVerdict::refuse);
}

TEST(Breaker, HalfOpenToClosedOnTheProbesSuccess) {
    rrl::Breaker b = probing();
    EXPECT_EQ(b.success(), rrl::BreakerChange::closed);
    EXPECT_EQ(b.state, rrl::BreakerState::closed);
    EXPECT_EQ(b.failures, 0u);
    EXPECT_EQ(b.allow(1501), rrl::BreakerVerdict::call);
}

TEST(Breaker, HalfOpenToOpenOnTheProbesFailure) {
    rrl::Breaker b = probing();
    EXPECT_EQ(b.failure(1600), rrl::BreakerChange::none)
        << "already reported open";
    EXPECT_EQ(b.state, rrl::BreakerState::open);
    EXPECT_EQ(b.open_until_ms, 1600 + kCooldown);
    EXPECT_EQ(b.allow(1600 + kCooldown - 1), rrl::BreakerVerdict::refuse);
    expect_recovers(b, 1600 + kCooldown);
}

TEST(Breaker, HalfOpenAbandonedProbeLetsTheNextCallProbe) {
    rrl::Breaker b = probing();
    b.abandon();
    EXPECT_EQ(b.state, rrl::BreakerState::half_open);
    EXPECT_EQ(b.allow(1500), rrl::BreakerVerdict::probe);
}

TEST(Breaker, AbandonWithNoProbeOutChangesNothing) {
    rrl::Breaker closed = fresh();
    closed.abandon();
    EXPECT_EQ(closed.allow(0), rrl::BreakerVerdict::call);

    rrl::Breaker open = opened();
    open.abandon();
    EXPECT_EQ(open.state, rrl::BreakerState::open);
    EXPECT_EQ(open.allow(1000), rrl::BreakerVerdict::refuse);
}

TEST(Breaker, LateOutcomesWhileOpen) {
    // calls sent before the circuit opened answer late
    rrl::Breaker b = opened();
    EXPECT_EQ(b.failure(1200), rrl::BreakerChange::none);
    EXPECT_EQ(b.open_until_ms, 1200 + kCooldown) << "a failure extends it";
    EXPECT_EQ(b.success(), rrl::BreakerChange::closed)
        << "Redis answered: closed";
    EXPECT_EQ(b.allow(1201), rrl::BreakerVerdict::call);
}

TEST(Breaker, ALateSuccessWhileTheProbeIsOutEndsIt) {
    rrl::Breaker b = probing();
    EXPECT_EQ(b.success(), rrl::BreakerChange::closed);
    EXPECT_FALSE(b.probing);
    // the probe's own outcome, later: nothing to undo
    EXPECT_EQ(b.success(), rrl::BreakerChange::none);
}

TEST(Breaker, MaxFailuresOfZeroIsOne) {
    rrl::Breaker b = fresh(0);
    EXPECT_EQ(b.failure(5), rrl::BreakerChange::opened);
}

// The paths of the module that lost a probe, as the shim now drives the
// breaker on each: every one leaves the circuit able to close.

TEST(BreakerPaths, TwoPartsOfOneCallOnOneNodeShareItsProbe) {
    // a Cluster call with limits in two slots of one primary: the node is
    // asked once for the call, its parts ride on that probe
    rrl::Breaker b = opened();
    ASSERT_EQ(b.allow(1500), rrl::BreakerVerdict::probe);
    // (the shim no longer asks again for part 1, which was refused, and no
    // rollback clears the probe of part 0): the probe's reply closes it
    EXPECT_EQ(b.success(), rrl::BreakerChange::closed);
}

TEST(BreakerPaths, AProbeWhoseRequestWentAwayBeforeSendingIsAbandoned) {
    rrl::Breaker b = probing();
    b.abandon();
    expect_recovers(b, 1500);
}

TEST(BreakerPaths, ABatchThatFailsBeforeSendingFailsItsProbe) {
    // no connection, no memory, a failed write: a failure
    rrl::Breaker b = probing();
    b.failure(1500);
    EXPECT_FALSE(b.probing);
    expect_recovers(b, 1500 + kCooldown);
}

TEST(BreakerPaths, AnEnqueueThatFailsAbandonsItsProbe) {
    rrl::Breaker b = probing();
    b.abandon();
    EXPECT_EQ(b.allow(1500), rrl::BreakerVerdict::probe);
}

TEST(BreakerPaths, ATimeoutCountsEveryNodeOfTheCall) {
    // a call with parts on 12 nodes, each probing: each fails, none stays
    // with its probe out
    std::vector<rrl::Breaker> nodes(12, probing());
    for (rrl::Breaker& b : nodes) b.failure(1600);
    for (rrl::Breaker& b : nodes) {
        EXPECT_FALSE(b.probing);
        expect_recovers(b, 1600 + kCooldown);
    }
}

TEST(BreakerPaths, AProbeStuckWithoutAnOutcomeNeverRecovers) {
    // what the lost probes did: the circuit refuses forever
    rrl::Breaker b = probing();
    for (std::int64_t t = 1500; t < 100000; t += 100) {
        ASSERT_EQ(b.allow(t), rrl::BreakerVerdict::refuse);
    }
}

}  // namespace
