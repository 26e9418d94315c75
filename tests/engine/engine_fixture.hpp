// The engine against one fake Redis on the test's loop (engine_harness).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/engine_harness.hpp"
#include "api/rrl_conf.h"

namespace rrl_test {

const std::string kNoscript = "-NOSCRIPT No matching script. Please use EVAL.";

// a server that never answers a batch
inline std::string blackhole_batches(FakeConn&, const Argv& a) {
    return is_batch(a) ? std::string() : redis_reply(a);
}

class EngineTest : public ::testing::Test {
   protected:
    // ready: the connection set up (the script loaded)
    void start() {
        engine = make_engine(conf, loop);
        ASSERT_TRUE(engine);
        ASSERT_TRUE(loop.run_until([&] { return loaded(); }));
    }
    bool loaded() {
        size_t loads = redis.count("SCRIPT LOAD");
        if (loads == 0) return false;
        loop.run(2);  // its reply read
        return true;
    }
    rrl_metrics_t gauges() {
        rrl_metrics_t m{};
        rrl_engine_gauges(engine.get(), &m);
        return m;
    }
    bool finish(TestCall& c) {
        return loop.run_until([&] { return c.done > 0; });
    }
    // a batch answered by hand: its command's argv, last received
    Argv last_batch() {
        std::vector<Argv> b = redis.batch_commands();
        return b.empty() ? Argv{} : b.back();
    }

    TestLoop loop;
    FakeRedis redis{loop};
    EngineConf conf{RRL_SERVER_SINGLE, {&redis}};
    Engine engine{nullptr, rrl_engine_free};
};

}  // namespace rrl_test
