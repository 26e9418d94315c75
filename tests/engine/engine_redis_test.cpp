// The engine against a real redis-server (on a unix socket): the batch it
// builds is the script's, each request decided alone and in order, and a
// script flushed from Redis is loaded again.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/engine/engine_harness.hpp"
#include "tests/support/redis_server.hpp"
#include "api/rrl_conf.h"

namespace rrl_test {
namespace {

TEST(EngineRedis, ATurnsCallsAreDecidedInOrderByTheScript) {
    RedisServer redis;
    ASSERT_TRUE(redis.ok()) << redis.error();
    TestLoop loop;
    FakeRedis unused(loop, true);  // the conf's shape; its address replaced
    EngineConf conf(RRL_SERVER_SINGLE, {&unused});
    conf.addrs[0].unix_path = redis.socket_path().c_str();
    conf.server = "unix:" + redis.socket_path();
    Engine engine = make_engine(conf, loop);
    ASSERT_TRUE(engine);
    ASSERT_TRUE(loop.run_until([&] {
        rrl_metrics_t m{};
        rrl_engine_gauges(engine.get(), &m);
        return m.connections == 1;
    }));
    loop.run(20);  // the script loaded

    // 10 a second: of 11 calls in one turn, the 11th is rejected
    std::vector<std::unique_ptr<TestCall>> calls;
    for (int i = 0; i < 11; i++) {
        calls.push_back(
            std::make_unique<TestCall>(std::vector<std::string>{"rl:engine"}));
        ASSERT_TRUE(calls.back()->start(engine.get()));
    }
    ASSERT_TRUE(loop.run_until([&] { return calls.back()->done > 0; }));
    for (int i = 0; i < 11; i++) {
        EXPECT_EQ(calls[i]->result.rc, RRL_OK) << calls[i]->error();
        EXPECT_EQ(calls[i]->values[0], i < 10 ? 1 : 0) << i;
        EXPECT_EQ(calls[i]->values[3], i < 10 ? 9 - i : 0) << i;
    }

    // Redis lost the script: loaded again, the call decided
    RedisClient client(redis.socket_path());
    EXPECT_EQ(client.status_or_string({"SCRIPT", "FLUSH"}), "OK");
    TestCall after({"rl:engine"});
    ASSERT_TRUE(after.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return after.done > 0; }));
    EXPECT_EQ(after.result.rc, RRL_OK) << after.error();
    EXPECT_EQ(after.values[0], 0);
    EXPECT_EQ(loop.replies, 3u);  // the batch, NOSCRIPT, the batch again
}

}  // namespace
}  // namespace rrl_test
