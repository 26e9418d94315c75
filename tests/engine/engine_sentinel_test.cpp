// The engine in Sentinel mode, against fake sentinels and primaries: the
// primary asked with SENTINEL get-master-addr-by-name (with the Sentinel's
// own password), asked again every second, at once when the primary is
// lost or answers READONLY (a failover), and sentinels asked in turn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/engine_harness.hpp"
#include "api/rrl_conf.h"

namespace rrl_test {
namespace {

class SentinelTest : public ::testing::Test {
   protected:
    void SetUp() override {
        for (FakeRedis* s : {&s1, &s2}) {
            s->handler = [this](FakeConn&, const Argv& x) {
                if (x[0] == "SENTINEL") return sentinel_primary(primary);
                return redis_reply(x);
            };
        }
    }
    void start(EngineConf& c) {
        engine = make_engine(c, loop);
        ASSERT_TRUE(engine);
        ASSERT_TRUE(loop.run_until([&] { return p.count("SCRIPT LOAD"); }));
        loop.run(3);
    }
    bool finish(TestCall& call) {
        return loop.run_until([&] { return call.done > 0; });
    }
    size_t asked() {
        return s1.count("SENTINEL get-master-addr-by-name mymaster") +
               s2.count("SENTINEL get-master-addr-by-name mymaster");
    }

    TestLoop loop;
    FakeRedis s1{loop}, s2{loop}, p{loop}, q{loop};
    unsigned primary = p.port();
    EngineConf conf{RRL_SERVER_SENTINEL, {&s1}};
    Engine engine{nullptr, rrl_engine_free};
};

TEST_F(SentinelTest, CallsGoToThePrimaryTheSentinelNames) {
    conf.sentinel_password = "sentinel-secret";
    conf.password = "data-secret";
    engine = make_engine(conf, loop);
    TestCall early({"k"});
    EXPECT_FALSE(early.start(engine.get()));  // no primary known yet
    // unlogged while the sentinel is asked: its answer tells
    EXPECT_FALSE(loop.logged("no connection to"));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 1u);
    start(conf);

    ASSERT_GE(s1.commands.size(), 2u);
    EXPECT_EQ(s1.commands[0], (Argv{"AUTH", "sentinel-secret"}));
    EXPECT_EQ(s1.commands[1],
              (Argv{"SENTINEL", "get-master-addr-by-name", "mymaster"}));
    EXPECT_EQ(s1.count("CLIENT"), 0u);  // a sentinel's setup is AUTH alone
    EXPECT_EQ(p.commands[0], (Argv{"AUTH", "data-secret"}));
    EXPECT_TRUE(loop.logged("sentinel " + s1.name() +
                            ": the primary of \"mymaster\" is " + p.name()));

    TestCall call({"k"});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    EXPECT_EQ(p.batches(), 1u);
    rrl_metrics_t m{};
    rrl_engine_gauges(engine.get(), &m);
    EXPECT_EQ(m.connections, 1u);  // sentinels are not counted
}

TEST_F(SentinelTest, AskedAgainEverySecond) {
    start(conf);
    EXPECT_EQ(asked(), 1u);
    loop.advance(999);
    loop.run(3);
    EXPECT_EQ(asked(), 1u);
    loop.advance(1);
    ASSERT_TRUE(loop.run_until([&] { return asked() == 2; }));
    // the same primary: no new log line, the same connection
    loop.run(3);
    EXPECT_EQ(loop.count_logged("the primary of"), 1u);
    EXPECT_EQ(p.accepted(), 1u);
}

TEST_F(SentinelTest, ReadonlyAsksAgainAndTheNewPrimaryServes) {
    start(conf);
    p.handler = [](FakeConn&, const Argv& x) {
        if (!is_batch(x)) return redis_reply(x);
        return std::string(
            "-READONLY You can't write against a read only replica.\r\n");
    };
    TestCall call({"k"});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error(),
              "READONLY You can't write against a read only replica.");
    EXPECT_EQ(call.node(), p.name());

    primary = q.port();  // failed over
    loop.advance(100);   // asked at most every 100 ms
    ASSERT_TRUE(loop.run_until([&] { return asked() == 2; }));
    ASSERT_TRUE(loop.run_until([&] { return q.count("SCRIPT LOAD") == 1; }));
    loop.run(3);
    EXPECT_TRUE(loop.logged("the primary of \"mymaster\" is " + q.name()));

    TestCall next({"k"});
    ASSERT_TRUE(next.start(engine.get()));
    ASSERT_TRUE(finish(next));
    EXPECT_TRUE(next.passed());
    EXPECT_EQ(q.batches(), 1u);
    // the old primary is closed, once idle
    ASSERT_TRUE(loop.run_until([&] { return p.open_conns() == 0; }));
    EXPECT_TRUE(loop.logged(p.name() + " is no more in use, closing"));
}

TEST_F(SentinelTest, ThePrimaryLostAsksAtOnce) {
    start(conf);
    p.close_all();
    ASSERT_TRUE(loop.run_until(
        [&] { return loop.logged("connection to " + p.name() + " lost"); }));
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] { return asked() == 2; }));
}

TEST_F(SentinelTest, ASentinelThatDoesNotAnswerIsFollowedByTheNext) {
    s1.handler = [](FakeConn&, const Argv& x) {
        return x[0] == "SENTINEL" ? std::string() : redis_reply(x);
    };
    EngineConf two(RRL_SERVER_SENTINEL, {&s1, &s2});
    engine = make_engine(two, loop);
    ASSERT_TRUE(loop.run_until([&] { return asked() == 1; }));
    loop.advance(399);  // connect_timeout + timeout
    EXPECT_FALSE(loop.logged("did not answer in time"));
    loop.advance(1);
    EXPECT_TRUE(
        loop.logged("sentinel " + s1.name() + " did not answer in time"));
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] { return s2.count("SENTINEL") == 1; }));
    ASSERT_TRUE(loop.run_until([&] { return p.count("SCRIPT LOAD") == 1; }));
    loop.run(3);
    TestCall call({"k"});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
}

TEST_F(SentinelTest, AnAnswerThatNamesNoPrimaryIsLogged) {
    s1.handler = [](FakeConn&, const Argv& x) {
        return x[0] == "SENTINEL" ? std::string("*-1\r\n") : redis_reply(x);
    };
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return asked() == 1; }));
    ASSERT_TRUE(
        loop.run_until([&] { return loop.logged("sentinel " + s1.name()); }));
    TestCall call({"k"});
    EXPECT_FALSE(call.start(engine.get()));

    // a primary by name: never resolved by a worker
    s1.handler = [](FakeConn&, const Argv& x) {
        return x[0] == "SENTINEL" ? array({bulk("redis-p"), bulk("6379")})
                                  : redis_reply(x);
    };
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] { return asked() == 2; }));
    ASSERT_TRUE(loop.run_until([&] {
        return loop.logged("sentinel " + s1.name() +
                           " names the primary by \"redis-p\", not by a "
                           "numeric address");
    }));
}

TEST_F(SentinelTest, ASentinelNotConnectedIsAskedAgain) {
    loop.fail_attach = true;
    engine = make_engine(conf, loop);
    loop.run(5);
    EXPECT_EQ(asked(), 0u);
    loop.fail_attach = false;
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] { return p.count("SCRIPT LOAD") == 1; }));
    EXPECT_EQ(asked(), 1u);
}

}  // namespace
}  // namespace rrl_test
