// The engine's circuit breaker, one a node: max_failures failures in a row
// open it, calls are refused while it is open, one probe after the
// cooldown closes it or opens it again; every probe has an exit; a stuck
// connection is dropped when it opens.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/engine_fixture.hpp"

namespace rrl_test {
namespace {

std::string fail_batches(FakeConn&, const Argv& a) {
    return is_batch(a) ? std::string("-ERR boom\r\n") : redis_reply(a);
}

class BreakerTest : public EngineTest {
   protected:
    void SetUp() override {
        conf.conf.max_failures = 2;
        conf.conf.cooldown_ms = 1000;
    }
    // two calls fail: the circuit opens
    void open() {
        start();
        redis.handler = fail_batches;
        for (int i = 0; i < 2; i++) {
            TestCall c({"k"});
            ASSERT_TRUE(c.start(engine.get()));
            ASSERT_TRUE(finish(c));
            EXPECT_EQ(c.error(), "ERR boom");
        }
        ASSERT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_OPEN], 1u);
    }
};

TEST_F(BreakerTest, OpensRefusesThenOneProbeClosesIt) {
    open();
    EXPECT_TRUE(loop.logged("2 failures in a row on " + redis.name() +
                            ", circuit open: the fail mode answers, a probe "
                            "every 1000 ms"));
    TestCall refused({"k"});
    EXPECT_FALSE(refused.start(engine.get()));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CIRCUIT_OPEN], 1u);
    loop.advance(999);
    EXPECT_FALSE(refused.start(engine.get()));
    EXPECT_EQ(redis.batches(), 2u);  // Redis was not asked

    loop.advance(1);
    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    TestCall probe({"k"}), other({"k"});
    ASSERT_TRUE(probe.start(engine.get()));
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_HALF_OPEN], 1u);
    EXPECT_FALSE(other.start(engine.get()));  // one probe at a time
    ASSERT_TRUE(finish(probe));
    EXPECT_TRUE(probe.passed());
    EXPECT_TRUE(loop.logged(redis.name() + " answers again, circuit closed"));
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_CLOSED], 1u);
    ASSERT_TRUE(other.start(engine.get()));
    ASSERT_TRUE(finish(other));
    EXPECT_TRUE(other.passed());
}

TEST_F(BreakerTest, AFailedProbeOpensItAgain) {
    open();
    loop.advance(1000);
    TestCall probe({"k"});
    ASSERT_TRUE(probe.start(engine.get()));
    ASSERT_TRUE(finish(probe));
    EXPECT_EQ(probe.result.rc, RRL_ERROR);
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_OPEN], 1u);
    TestCall refused({"k"});
    EXPECT_FALSE(refused.start(engine.get()));
    loop.advance(1000);
    ASSERT_TRUE(refused.start(engine.get()));  // the next probe
    ASSERT_TRUE(finish(refused));
}

TEST_F(BreakerTest, AProbeNeverSentIsAbandoned) {
    open();
    loop.advance(1000);
    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    TestCall gone({"k"});
    ASSERT_TRUE(gone.start(engine.get()));
    gone.detach();  // before its batch went: the probe is not made
    loop.run(3);
    EXPECT_EQ(redis.batches(), 2u);
    TestCall probe({"k"});
    ASSERT_TRUE(probe.start(engine.get()));  // the next call probes
    ASSERT_TRUE(finish(probe));
    EXPECT_TRUE(probe.passed());
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_CLOSED], 1u);
}

TEST_F(BreakerTest, ADetachedProbeUnansweredForATimeoutIsAFailure) {
    open();
    loop.advance(1000);
    redis.handler = blackhole_batches;
    TestCall probe({"k"});
    ASSERT_TRUE(probe.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 3; }));
    // a parked call's timer holds a graceful shutdown; once detached with
    // the probe out, it still ends the probe but holds nothing
    size_t held = loop.timers(false);
    probe.detach();
    EXPECT_EQ(loop.timers(false), held - 1);
    EXPECT_EQ(gauges().parked, 0u);
    TestCall refused({"k"});
    EXPECT_FALSE(refused.start(engine.get()));  // the probe is still out

    loop.advance(200);
    EXPECT_EQ(probe.done, 0);
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_OPEN], 1u);
    EXPECT_FALSE(refused.start(engine.get()));
}

TEST_F(BreakerTest, TimeoutsOpenItAndTheStuckConnectionIsDropped) {
    conf.conf.max_failures = 1;
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    loop.advance(200);
    EXPECT_EQ(c.error(), "timed out after 200 ms");
    EXPECT_TRUE(loop.logged("1 failures in a row on " + redis.name()));
    // replies owed, nothing read for a whole timeout: started afresh
    ASSERT_TRUE(loop.run_until([&] { return redis.open_conns() == 0; }));
    EXPECT_TRUE(loop.logged("connection to " + redis.name() + " lost"));
    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    loop.advance(37);
    ASSERT_TRUE(loop.run_until([&] { return redis.accepted() == 2; }));
    ASSERT_TRUE(
        loop.run_until([&] { return redis.count("SCRIPT LOAD") == 2; }));
    loop.run(2);
    EXPECT_EQ(gauges().connections, 1u);
}

TEST_F(BreakerTest, ASlowButLiveConnectionIsKept) {
    conf.conf.max_failures = 1;
    start();
    redis.handler = blackhole_batches;
    TestCall slow({"s"}), c({"c"});
    ASSERT_TRUE(slow.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 2; }));
    loop.advance(150);
    // something read within the timeout: the connection is not stuck
    redis.last_open()->send(pass_reply(redis.batch_commands()[0]));
    ASSERT_TRUE(finish(slow));
    loop.advance(50);
    EXPECT_EQ(c.error(), "timed out after 200 ms");
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_OPEN], 1u);
    loop.run(5);
    EXPECT_EQ(redis.open_conns(), 1u);
    EXPECT_FALSE(loop.logged("lost"));
}

}  // namespace
}  // namespace rrl_test
