// The circuit breaker as a state machine (rrl_breaker_*): every transition,
// and the paths by which a half-open probe used to be lost, so that the
// circuit never closed again: each must end as a success, a failure or an
// abandonment, and each of those leaves a state that closes once Redis
// answers.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rrl.h"

namespace {

constexpr std::int64_t kCooldown = 500;

rrl_breaker_t fresh(std::uint64_t max_failures = 3) {
    rrl_breaker_t b;
    rrl_breaker_init(&b, max_failures, kCooldown);
    return b;
}

// opened at t = 1000 by max_failures failures
rrl_breaker_t opened() {
    rrl_breaker_t b = fresh();
    for (int i = 0; i < 3; i++) rrl_breaker_failure(&b, 1000);
    EXPECT_EQ(b.state, RRL_BREAKER_OPEN);
    return b;
}

// half open at t = 1500, its probe out
rrl_breaker_t probing() {
    rrl_breaker_t b = opened();
    EXPECT_EQ(rrl_breaker_allow(&b, 1000 + kCooldown), RRL_BREAKER_PROBE);
    EXPECT_EQ(b.state, RRL_BREAKER_HALF_OPEN);
    return b;
}

// the circuit closes once Redis answers: the next allowed call succeeds
void expect_recovers(rrl_breaker_t b, std::int64_t from) {
    std::int64_t t = from;
    int verdict = RRL_BREAKER_REFUSE;
    for (; t < from + 10 * kCooldown; t += 10) {
        verdict = rrl_breaker_allow(&b, t);
        if (verdict != RRL_BREAKER_REFUSE) break;
    }
    ASSERT_NE(verdict, RRL_BREAKER_REFUSE) << "never allows a call again";
    EXPECT_LE(t, from + kCooldown) << "within the cooldown";
    rrl_breaker_success(&b);
    EXPECT_EQ(b.state, RRL_BREAKER_CLOSED);
    EXPECT_EQ(rrl_breaker_allow(&b, t), RRL_BREAKER_CALL);
}

TEST(Breaker, ClosedAllowsEveryCall) {
    rrl_breaker_t b = fresh();
    for (int i = 0; i < 10; i++) EXPECT_EQ(rrl_breaker_allow(&b, i), RRL_BREAKER_CALL);
    EXPECT_EQ(b.state, RRL_BREAKER_CLOSED);
}

TEST(Breaker, ClosedStaysClosedBelowMaxFailures) {
    rrl_breaker_t b = fresh();
    EXPECT_EQ(rrl_breaker_failure(&b, 1), RRL_BREAKER_NO_CHANGE);
    EXPECT_EQ(rrl_breaker_failure(&b, 2), RRL_BREAKER_NO_CHANGE);
    EXPECT_EQ(b.state, RRL_BREAKER_CLOSED);
    EXPECT_EQ(rrl_breaker_allow(&b, 3), RRL_BREAKER_CALL);
}

TEST(Breaker, ASuccessResetsTheFailuresInARow) {
    rrl_breaker_t b = fresh();
    rrl_breaker_failure(&b, 1);
    rrl_breaker_failure(&b, 2);
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_NO_CHANGE);
    rrl_breaker_failure(&b, 3);
    rrl_breaker_failure(&b, 4);
    EXPECT_EQ(b.state, RRL_BREAKER_CLOSED);
}

TEST(Breaker, ClosedToOpenAtMaxFailures) {
    rrl_breaker_t b = fresh();
    rrl_breaker_failure(&b, 1000);
    rrl_breaker_failure(&b, 1000);
    EXPECT_EQ(rrl_breaker_failure(&b, 1000), RRL_BREAKER_OPENED);
    EXPECT_EQ(b.state, RRL_BREAKER_OPEN);
    EXPECT_EQ(b.open_until_ms, 1000 + kCooldown);
}

TEST(Breaker, OpenRefusesUntilTheCooldownEnds) {
    rrl_breaker_t b = opened();
    EXPECT_EQ(rrl_breaker_allow(&b, 1000), RRL_BREAKER_REFUSE);
    EXPECT_EQ(rrl_breaker_allow(&b, 1000 + kCooldown - 1), RRL_BREAKER_REFUSE);
    EXPECT_EQ(b.state, RRL_BREAKER_OPEN);
}

TEST(Breaker, OpenToHalfOpenGrantsOneProbe) {
    rrl_breaker_t b = opened();
    EXPECT_EQ(rrl_breaker_allow(&b, 1000 + kCooldown), RRL_BREAKER_PROBE);
    EXPECT_EQ(b.state, RRL_BREAKER_HALF_OPEN);
    EXPECT_EQ(rrl_breaker_allow(&b, 1000 + kCooldown), RRL_BREAKER_REFUSE)
        << "one probe at a time";
    EXPECT_EQ(rrl_breaker_allow(&b, 99999), RRL_BREAKER_REFUSE);
}

TEST(Breaker, HalfOpenToClosedOnTheProbesSuccess) {
    rrl_breaker_t b = probing();
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_CLOSED_AGAIN);
    EXPECT_EQ(b.state, RRL_BREAKER_CLOSED);
    EXPECT_EQ(b.failures, 0u);
    EXPECT_EQ(rrl_breaker_allow(&b, 1501), RRL_BREAKER_CALL);
}

TEST(Breaker, HalfOpenToOpenOnTheProbesFailure) {
    rrl_breaker_t b = probing();
    EXPECT_EQ(rrl_breaker_failure(&b, 1600), RRL_BREAKER_NO_CHANGE)
        << "already reported open";
    EXPECT_EQ(b.state, RRL_BREAKER_OPEN);
    EXPECT_EQ(b.open_until_ms, 1600 + kCooldown);
    EXPECT_EQ(rrl_breaker_allow(&b, 1600 + kCooldown - 1), RRL_BREAKER_REFUSE);
    expect_recovers(b, 1600 + kCooldown);
}

TEST(Breaker, HalfOpenAbandonedProbeLetsTheNextCallProbe) {
    rrl_breaker_t b = probing();
    rrl_breaker_abandon(&b);
    EXPECT_EQ(b.state, RRL_BREAKER_HALF_OPEN);
    EXPECT_EQ(rrl_breaker_allow(&b, 1500), RRL_BREAKER_PROBE);
}

TEST(Breaker, AbandonWithNoProbeOutChangesNothing) {
    rrl_breaker_t closed = fresh();
    rrl_breaker_abandon(&closed);
    EXPECT_EQ(rrl_breaker_allow(&closed, 0), RRL_BREAKER_CALL);

    rrl_breaker_t open = opened();
    rrl_breaker_abandon(&open);
    EXPECT_EQ(open.state, RRL_BREAKER_OPEN);
    EXPECT_EQ(rrl_breaker_allow(&open, 1000), RRL_BREAKER_REFUSE);
}

TEST(Breaker, LateOutcomesWhileOpen) {
    // calls sent before the circuit opened answer late
    rrl_breaker_t b = opened();
    EXPECT_EQ(rrl_breaker_failure(&b, 1200), RRL_BREAKER_NO_CHANGE);
    EXPECT_EQ(b.open_until_ms, 1200 + kCooldown) << "a failure extends it";
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_CLOSED_AGAIN)
        << "Redis answered: closed";
    EXPECT_EQ(rrl_breaker_allow(&b, 1201), RRL_BREAKER_CALL);
}

TEST(Breaker, ALateSuccessWhileTheProbeIsOutEndsIt) {
    rrl_breaker_t b = probing();
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_CLOSED_AGAIN);
    EXPECT_EQ(b.probing, 0);
    // the probe's own outcome, later: nothing to undo
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_NO_CHANGE);
}

TEST(Breaker, MaxFailuresOfZeroIsOne) {
    rrl_breaker_t b = fresh(0);
    EXPECT_EQ(rrl_breaker_failure(&b, 5), RRL_BREAKER_OPENED);
}

// The paths of the module that lost a probe, as the shim now drives the
// breaker on each: every one leaves the circuit able to close.

TEST(BreakerPaths, TwoPartsOfOneCallOnOneNodeShareItsProbe) {
    // a Cluster call with limits in two slots of one primary: the node is
    // asked once for the call, its parts ride on that probe
    rrl_breaker_t b = opened();
    ASSERT_EQ(rrl_breaker_allow(&b, 1500), RRL_BREAKER_PROBE);
    // (the shim no longer asks again for part 1, which was refused, and no
    // rollback clears the probe of part 0): the probe's reply closes it
    EXPECT_EQ(rrl_breaker_success(&b), RRL_BREAKER_CLOSED_AGAIN);
}

TEST(BreakerPaths, AProbeWhoseRequestWentAwayBeforeSendingIsAbandoned) {
    rrl_breaker_t b = probing();
    rrl_breaker_abandon(&b);
    expect_recovers(b, 1500);
}

TEST(BreakerPaths, ABatchThatFailsBeforeSendingFailsItsProbe) {
    // no connection, no memory, a failed write: a failure
    rrl_breaker_t b = probing();
    rrl_breaker_failure(&b, 1500);
    EXPECT_EQ(b.probing, 0);
    expect_recovers(b, 1500 + kCooldown);
}

TEST(BreakerPaths, AnEnqueueThatFailsAbandonsItsProbe) {
    rrl_breaker_t b = probing();
    rrl_breaker_abandon(&b);
    EXPECT_EQ(rrl_breaker_allow(&b, 1500), RRL_BREAKER_PROBE);
}

TEST(BreakerPaths, ATimeoutCountsEveryNodeOfTheCall) {
    // a call with parts on 12 nodes, each probing: each fails, none stays
    // with its probe out
    std::vector<rrl_breaker_t> nodes(12, probing());
    for (rrl_breaker_t& b : nodes) rrl_breaker_failure(&b, 1600);
    for (rrl_breaker_t& b : nodes) {
        EXPECT_EQ(b.probing, 0);
        expect_recovers(b, 1600 + kCooldown);
    }
}

TEST(BreakerPaths, AProbeStuckWithoutAnOutcomeNeverRecovers) {
    // what the lost probes did: the circuit refuses forever
    rrl_breaker_t b = probing();
    for (std::int64_t t = 1500; t < 100000; t += 100) {
        ASSERT_EQ(rrl_breaker_allow(&b, t), RRL_BREAKER_REFUSE);
    }
}

}  // namespace
