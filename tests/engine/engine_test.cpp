// The engine (rrl_engine.h) against one Redis, a fake one on the test's
// loop: the connection's setup, a turn's calls in one batch, each its share
// of the reply, NOSCRIPT, error and bad replies, timeouts, late and
// unsolicited replies, the circuit breaker, max_parked, detach, reconnects.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/rrl_conf.h"
#include "script/script.hpp"
#include "tests/engine/engine_fixture.hpp"
#include "tests/support/call_limit.hpp"

namespace rrl_test {
namespace {

TEST_F(EngineTest, SetsUpTheConnectionInOrder) {
    conf.username = "app";
    conf.password = "secret";
    conf.conf.db = 3;
    start();

    ASSERT_GE(redis.commands.size(), 4u);
    EXPECT_EQ(redis.commands[0], (Argv{"AUTH", "app", "secret"}));
    EXPECT_EQ(redis.commands[1], (Argv{"SELECT", "3"}));
    EXPECT_EQ(redis.commands[2],
              (Argv{"CLIENT", "SETNAME", "nginx-redis-ratelimit"}));
    std::string_view script_text = rrl::script();
    const char* script = script_text.data();
    size_t len = script_text.size();
    EXPECT_EQ(redis.commands[3],
              (Argv{"SCRIPT", "LOAD", std::string(script, len)}));
    EXPECT_TRUE(loop.logged("connected to " + redis.name()));
    EXPECT_EQ(gauges().connections, 1u);
}

TEST_F(EngineTest, PasswordAloneAndNoDatabase) {
    conf.password = "secret";
    start();
    EXPECT_EQ(redis.commands[0], (Argv{"AUTH", "secret"}));
    EXPECT_EQ(redis.commands[1][0], "CLIENT");
    EXPECT_EQ(redis.count("SELECT"), 0u);
}

TEST_F(EngineTest, NoAuthNoSelectByDefault) {
    start();
    EXPECT_EQ(redis.commands[0][0], "CLIENT");
    EXPECT_EQ(redis.count("AUTH"), 0u);
}

TEST_F(EngineTest, AWrongPasswordIsLoggedAndNoScriptIsLoaded) {
    conf.password = "wrong";
    redis.handler = [](FakeConn&, const Argv& a) -> std::string {
        if (a[0] == "AUTH")
            return "-WRONGPASS invalid username-password pair\r\n";
        if (a[0] == "CLIENT") return "-NOAUTH Authentication required.\r\n";
        return redis_reply(a);
    };
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return redis.commands.size() >= 2; }));
    loop.run(5);
    EXPECT_TRUE(loop.logged("AUTH on " + redis.name() +
                            " failed: WRONGPASS invalid username-password"));
    EXPECT_TRUE(
        loop.logged("CLIENT SETNAME on " + redis.name() + " failed: NOAUTH"));
    EXPECT_EQ(redis.count("SCRIPT LOAD"), 0u);
}

TEST_F(EngineTest, OverAUnixSocket) {
    FakeRedis local(loop, true);
    EngineConf unix_conf(RRL_SERVER_SINGLE, {&local});
    engine = make_engine(unix_conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return local.count("SCRIPT LOAD"); }));
    loop.run(2);
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(c));
    EXPECT_TRUE(c.passed());
    EXPECT_TRUE(loop.logged("connected to unix:" + local.path()));
}

TEST_F(EngineTest, ACallPassesWithTheScriptsReply) {
    start();
    TestCall c({"rl:a", "rl:b"});
    ASSERT_TRUE(c.start(engine.get()));
    EXPECT_EQ(c.done, 0);  // reported from the loop, never at once
    EXPECT_EQ(gauges().parked, 1u);
    // sent and written in the turn it was made: read by Redis in the next
    loop.turn();
    EXPECT_GT(loop.flushes, 0u);
    loop.turn();
    EXPECT_EQ(redis.batches(), 1u);
    ASSERT_TRUE(finish(c));

    EXPECT_EQ(c.done, 1);
    EXPECT_EQ(c.result.rc, RRL_OK);
    ASSERT_EQ(c.result.nvalues, 2u + 4u * 2);
    EXPECT_EQ(c.values[0], 1);
    EXPECT_EQ(c.values[1], kNow);
    EXPECT_EQ(c.values[2], 1);
    EXPECT_EQ(c.values[3], kRemaining);
    EXPECT_EQ(c.values[7], kRemaining);
    EXPECT_EQ(c.result.node, nullptr);
    EXPECT_EQ(gauges().parked, 0u);
    EXPECT_EQ(loop.replies, 1u);

    ASSERT_EQ(redis.batches(), 1u);
    Argv batch = last_batch();
    EXPECT_EQ(batch[1], rrl_script_sha1());
    EXPECT_EQ(batch_requests(batch), (std::vector<Argv>{{"rl:a", "rl:b"}}));
    loop.run(5);
    EXPECT_EQ(c.done, 1);  // once
}

// A batch of calls whose limits' zones have overrides=on or not: each
// call gets its share, as wide as its limits make it.
TEST_F(EngineTest, ABatchOfZonesWithAndWithoutOverridesSplitsAtTheirWidths) {
    start();
    TestCall a({"a"}), b({"b1", "b2"}, {true, false}), c({"c"}, {true});
    ASSERT_TRUE(a.start(engine.get()));
    ASSERT_TRUE(b.start(engine.get()));
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(a) && finish(b) && finish(c));

    ASSERT_EQ(redis.batches(), 1u);
    Argv batch = last_batch();
    EXPECT_EQ(batch_requests(batch),
              (std::vector<Argv>{{"a"}, {"b1", "b2"}, {"c"}}));
    EXPECT_EQ(std::count(batch.begin(), batch.end(),
                         "sliding_window" RRL_OVERRIDES_SUFFIX),
              1);  // the zone named once
    ASSERT_EQ(a.result.nvalues, 2u + 4);
    ASSERT_EQ(b.result.nvalues, 2u + 8 + 4);
    ASSERT_EQ(c.result.nvalues, 2u + 8);
    EXPECT_EQ(std::vector<int64_t>(b.values, b.values + 14),
              (std::vector<int64_t>{1, kNow, 1, kRemaining, 1000000, 0,
                                    RRL_OVERRIDE_RATE, 7, 2000, 0, 1,
                                    kRemaining, 1000000, 0}));
    EXPECT_EQ(std::vector<int64_t>(c.values, c.values + 10),
              (std::vector<int64_t>{1, kNow, 1, kRemaining, 1000000, 0,
                                    RRL_OVERRIDE_RATE, 7, 2000, 0}));
    EXPECT_TRUE(a.passed());
}

TEST_F(EngineTest, ATurnsCallsGoAsOneBatchEachWithItsShare) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        if (!is_batch(a)) return redis_reply(a);
        return batch_reply(a, [](size_t i, const Argv&) { return i != 1; });
    };
    TestCall a({"a"}), b({"b1", "b2"}), c({"c"});
    ASSERT_TRUE(a.start(engine.get()));
    ASSERT_TRUE(b.start(engine.get()));
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(a) && finish(b) && finish(c));

    ASSERT_EQ(redis.batches(), 1u);
    EXPECT_EQ(batch_requests(last_batch()),
              (std::vector<Argv>{{"a"}, {"b1", "b2"}, {"c"}}));
    EXPECT_TRUE(a.passed());
    EXPECT_EQ(b.result.rc, RRL_OK);
    EXPECT_EQ(b.values[0], 0);  // rejected: its own share
    EXPECT_EQ(b.result.nvalues, 10u);
    EXPECT_EQ(b.values[9], 500000);
    EXPECT_TRUE(c.passed());
    EXPECT_EQ(redis.releases(), 0u);  // one part: nothing to give back

    // the next turn's calls: a batch of their own
    TestCall d({"d"});
    ASSERT_TRUE(d.start(engine.get()));
    ASSERT_TRUE(finish(d));
    EXPECT_EQ(redis.batches(), 2u);
}

TEST_F(EngineTest, AFullBatchGoesAtOnce) {
    start();
    std::vector<std::unique_ptr<TestCall>> calls;
    for (int i = 0; i < 65; i++) {
        calls.push_back(std::make_unique<TestCall>(
            std::vector<std::string>{"k" + std::to_string(i)}));
        ASSERT_TRUE(calls.back()->start(engine.get()));
    }
    ASSERT_TRUE(loop.run_until([&] {
        for (auto& c : calls) {
            if (!c->done) return false;
        }
        return true;
    }));
    std::vector<Argv> batches = redis.batch_commands();
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batch_requests(batches[0]).size(), 64u);
    EXPECT_EQ(batch_requests(batches[1]).size(), 1u);
    for (auto& c : calls) EXPECT_TRUE(c->passed());
}

TEST_F(EngineTest, NoscriptLoadsTheScriptAndSendsTheBatchAgain) {
    start();
    int evals = 0;
    redis.handler = [&](FakeConn&, const Argv& a) {
        if (is_batch(a) && evals++ == 0) return kNoscript + "\r\n";
        return redis_reply(a);
    };
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(c));

    EXPECT_TRUE(c.passed());
    std::vector<Argv> batches = redis.batch_commands();
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[0], batches[1]);          // the same command
    EXPECT_EQ(redis.count("SCRIPT LOAD"), 2u);  // the handshake's, and this
    Argv& before = redis.commands[redis.commands.size() - 2];
    EXPECT_EQ(before[0] + " " + before[1], "SCRIPT LOAD");
    EXPECT_EQ(gauges().circuits[RRL_METRICS_CIRCUIT_CLOSED], 1u);
}

TEST_F(EngineTest, NoscriptTwiceFailsTheCall) {
    conf.conf.max_failures = 1;
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return is_batch(a) ? kNoscript + "\r\n" : redis_reply(a);
    };
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(c));
    EXPECT_EQ(c.result.rc, RRL_ERROR);
    EXPECT_EQ(c.error(), kNoscript.substr(1));
    EXPECT_EQ(c.node(), redis.name());
    EXPECT_EQ(redis.batches(), 2u);  // reloaded once only
    // NOSCRIPT is Redis answering: no failure for the breaker
    TestCall d({"k"});
    ASSERT_TRUE(d.start(engine.get()));
    ASSERT_TRUE(finish(d));
}

TEST_F(EngineTest, AnErrorReplyFailsEveryCallOfTheBatch) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return is_batch(a) ? std::string("-OOM command not allowed\r\n")
                           : redis_reply(a);
    };
    TestCall a({"a"}), b({"b"});
    ASSERT_TRUE(a.start(engine.get()));
    ASSERT_TRUE(b.start(engine.get()));
    ASSERT_TRUE(finish(a) && finish(b));
    for (TestCall* c : {&a, &b}) {
        EXPECT_EQ(c->result.rc, RRL_ERROR);
        EXPECT_EQ(c->result.nvalues, 0u);
        EXPECT_EQ(c->error(), "OOM command not allowed");
        EXPECT_EQ(c->node(), redis.name());
    }
}

TEST_F(EngineTest, RepliesNotOfTheScriptsShapeFail) {
    start();
    struct Case {
        std::function<std::string(const Argv&)> reply;
        std::string error;
    };
    std::vector<Case> cases = {
        {[](const Argv&) { return std::string("+OK\r\n"); },
         "unexpected reply type 5"},
        {[](const Argv&) {
             return array({integer(1), integer(2)});
         },
         "unexpected reply type 2"},
        {[](const Argv& a) {
             std::string r = pass_reply(a);
             // the last integer a string
             return r.substr(0, r.rfind(':')) + bulk("0");
         },
         "unexpected element type 1"},
        // hiredis 1.x refuses a LF in an error line: another control byte
        {[](const Argv&) {
             return std::string(HIREDIS_MAJOR >= 1 ? "-ERR \x01\x1b forged\r\n"
                                                   : "-ERR \x01\nforged\r\n");
         },
         "ERR \\x01"},
    };
    for (const Case& k : cases) {
        redis.handler = [&](FakeConn&, const Argv& a) {
            return is_batch(a) ? k.reply(a) : redis_reply(a);
        };
        TestCall c({"k"});
        ASSERT_TRUE(c.start(engine.get()));
        ASSERT_TRUE(finish(c));
        EXPECT_EQ(c.result.rc, RRL_ERROR);
        EXPECT_EQ(c.error().substr(0, k.error.size()), k.error) << c.error();
    }
}

TEST_F(EngineTest, ACallTimesOutAndItsLateReplyIsDropped) {
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    loop.advance(199);
    EXPECT_EQ(c.done, 0);
    loop.advance(1);
    ASSERT_EQ(c.done, 1);
    EXPECT_EQ(c.result.rc, RRL_ERROR);
    EXPECT_EQ(c.error(), "timed out after 200 ms");
    EXPECT_EQ(c.node(), redis.name());
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_TIMEOUT], 1u);
    EXPECT_EQ(gauges().parked, 0u);

    // the late reply: dropped, the connection kept
    redis.last_open()->send(pass_reply(last_batch()));
    loop.run(10);
    EXPECT_EQ(c.done, 1);
    EXPECT_FALSE(loop.logged("lost"));
    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    TestCall d({"k"});
    ASSERT_TRUE(d.start(engine.get()));
    ASSERT_TRUE(finish(d));
    EXPECT_TRUE(d.passed());
    EXPECT_EQ(redis.accepted(), 1u);
}

TEST_F(EngineTest, ADetachedCallIsNeverReportedNorSent) {
    start();
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    c.detach();  // the client went away in the same turn
    EXPECT_EQ(gauges().parked, 0u);
    loop.run(10);
    EXPECT_EQ(c.done, 0);
    EXPECT_EQ(redis.batches(), 0u);
}

TEST_F(EngineTest, ACallDetachedInFlightDropsItsReply) {
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"}), other({"o"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    c.detach();
    EXPECT_EQ(gauges().parked, 0u);
    ASSERT_TRUE(other.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 2; }));

    FakeConn* conn = redis.last_open();
    std::vector<Argv> b = redis.batch_commands();
    conn->send(pass_reply(b[0]) + reject_reply(b[1]));
    ASSERT_TRUE(finish(other));
    EXPECT_EQ(c.done, 0);
    EXPECT_EQ(other.values[0], 0);  // its own reply, not the other's
    loop.advance(1000);             // no timer left to fire for it
    EXPECT_EQ(c.done, 0);
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_TIMEOUT], 0u);
    EXPECT_EQ(redis.accepted(), 1u);
}

TEST_F(EngineTest, AReplyNoCommandAwaitsClosesTheConnection) {
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    // one reply for the batch, and one more nobody asked for
    redis.last_open()->send(pass_reply(last_batch()) + "+OK\r\n");
    ASSERT_TRUE(loop.run_until([&] { return redis.open_conns() == 0; }));
    EXPECT_TRUE(loop.logged("connection to " + redis.name() +
                            " lost: a reply no command awaits"));
    // the reply the call awaited was read before the one too many
    ASSERT_TRUE(finish(c));
    EXPECT_TRUE(c.passed());

    // it reconnects after its backoff: 50 ms -25% (random 0)
    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    loop.advance(36);
    EXPECT_EQ(redis.accepted(), 1u);
    loop.advance(1);
    ASSERT_TRUE(
        loop.run_until([&] { return redis.count("SCRIPT LOAD") == 2; }));
    loop.run(2);
    TestCall d({"k"});
    ASSERT_TRUE(d.start(engine.get()));
    ASSERT_TRUE(finish(d));
    EXPECT_TRUE(d.passed());
}

TEST_F(EngineTest, ALostConnectionFailsItsCallsAndReconnects) {
    start();
    redis.handler = [](FakeConn& conn, const Argv& a) {
        if (is_batch(a)) conn.close_after = true;
        return is_batch(a) ? std::string() : redis_reply(a);
    };
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(c));
    EXPECT_EQ(c.result.rc, RRL_ERROR);
    EXPECT_EQ(c.error(), "connection lost");
    EXPECT_EQ(c.node(), redis.name());
    EXPECT_TRUE(loop.logged("connection to " + redis.name() + " lost"));
    EXPECT_EQ(gauges().connections, 0u);

    // no connection: not made, decided at once
    TestCall d({"k"});
    EXPECT_FALSE(d.start(engine.get()));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 1u);
    EXPECT_TRUE(loop.logged("no connection to " + redis.name()));

    redis.handler = [](FakeConn&, const Argv& a) { return redis_reply(a); };
    loop.advance(37);
    ASSERT_TRUE(
        loop.run_until([&] { return redis.count("SCRIPT LOAD") == 2; }));
    loop.run(2);
    EXPECT_EQ(gauges().connections, 1u);
    ASSERT_TRUE(d.start(engine.get()));
    ASSERT_TRUE(finish(d));
    EXPECT_TRUE(d.passed());
}

TEST_F(EngineTest, ReconnectsBackOffUpTo500ms) {
    unsigned port;
    {
        FakeRedis gone(loop);
        port = gone.port();
    }
    conf.addrs[0].port = port;
    conf.server = "127.0.0.1:" + std::to_string(port);
    engine = make_engine(conf, loop);
    std::string failed = "connection to 127.0.0.1:" + std::to_string(port) +
                         " failed: Connection refused";
    ASSERT_TRUE(loop.run_until([&] { return loop.count_logged(failed) == 1; }));

    // 50, 100, 200, 400, 500, 500 ms, each -25% with random 0
    for (uint64_t delay : {37, 75, 150, 300, 375, 375}) {
        size_t before = loop.count_logged(failed);
        loop.advance(delay - 1);
        loop.run(3);
        EXPECT_EQ(loop.count_logged(failed), before) << delay;
        loop.advance(1);
        ASSERT_TRUE(loop.run_until([&] {
            return loop.count_logged(failed) == before + 1;
        })) << delay;
    }
    EXPECT_EQ(gauges().connections, 0u);
    TestCall c({"k"});
    EXPECT_FALSE(c.start(engine.get()));
}

TEST_F(EngineTest, AConnectionNotAttachedIsRetried) {
    loop.fail_attach = true;
    engine = make_engine(conf, loop);
    loop.run(5);
    EXPECT_TRUE(redis.commands.empty());
    EXPECT_EQ(loop.contexts(), 0u);
    TestCall c({"k"});
    EXPECT_FALSE(c.start(engine.get()));

    loop.fail_attach = false;
    loop.advance(37);
    ASSERT_TRUE(loop.run_until([&] { return loaded(); }));
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(finish(c));
    EXPECT_TRUE(c.passed());
}

TEST_F(EngineTest, ConnectingTimesOut) {
    // a listener whose queue is full: the handshake's SYN is never answered
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), len), 0);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    ASSERT_EQ(listen(fd, 0), 0);
    std::vector<int> fillers;
    for (int i = 0; i < 2; i++) {
        int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        (void)connect(f, reinterpret_cast<sockaddr*>(&sa), len);
        fillers.push_back(f);
    }
    unsigned port = ntohs(sa.sin_port);
    conf.addrs[0].port = port;
    engine = make_engine(conf, loop);
    loop.run(10);
    std::string name = "127.0.0.1:" + std::to_string(port);
    if (loop.logged("connected to " + name)) {
        GTEST_SKIP() << "the kernel completed the connection";
    }
    loop.advance(199);
    EXPECT_FALSE(loop.logged("connecting to " + name + " timed out"));
    loop.advance(1);
    EXPECT_TRUE(loop.logged("connecting to " + name + " timed out"));
    EXPECT_EQ(gauges().connections, 0u);
    for (int f : fillers) close(f);
    close(fd);
}

TEST_F(EngineTest, MaxParkedRefusesMoreCalls) {
    conf.conf.max_parked = 2;
    start();
    redis.handler = blackhole_batches;
    TestCall a({"a"}), b({"b"}), c({"c"});
    ASSERT_TRUE(a.start(engine.get()));
    ASSERT_TRUE(b.start(engine.get()));
    EXPECT_EQ(gauges().parked, 2u);
    EXPECT_FALSE(c.start(engine.get()));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_MAX_PARKED], 1u);
    EXPECT_TRUE(loop.logged("2 requests already wait for " + redis.name()));

    loop.advance(200);  // both time out, before their batch went
    EXPECT_EQ(a.done + b.done, 2);
    EXPECT_EQ(gauges().parked, 0u);
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    EXPECT_EQ(batch_requests(last_batch()), (std::vector<Argv>{{"c"}}));
    loop.advance(200);
    EXPECT_EQ(c.done, 1);
}

TEST_F(EngineTest, FreedWithACallInFlight) {
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    engine.reset();  // the worker exits: no reconnect
    EXPECT_EQ(loop.contexts(), 0u);
    EXPECT_EQ(loop.timers(true), 0u);
    // no turn of the loop follows exit_process (the call's report, posted
    // as its connection was freed, never runs: as in nginx)
    EXPECT_EQ(c.done, 0);
    c.call = nullptr;  // its request dies with the worker
}

TEST_F(EngineTest, AConnectionLostBeforeTheBatchWentFailsIt) {
    start();
    redis.close_all();
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));  // the loss is not seen yet
    ASSERT_TRUE(finish(c));
    EXPECT_EQ(c.result.rc, RRL_ERROR);
    EXPECT_EQ(c.error(), "no connection");
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 1u);
    EXPECT_EQ(redis.batches(), 0u);
}

TEST_F(EngineTest, NoReconnectWhileTheWorkerQuits) {
    start();
    loop.quitting = true;
    redis.close_all();
    ASSERT_TRUE(loop.run_until([&] { return loop.logged("lost"); }));
    loop.advance(1000);
    loop.run(5);
    EXPECT_EQ(redis.accepted(), 1u);
    EXPECT_EQ(loop.contexts(), 0u);
}

TEST_F(EngineTest, NotMadeWithANameOrAnEventTooLarge) {
    conf.addrs[0].host = "localhost";  // never resolved by a worker
    EXPECT_EQ(rrl_engine_new(conf.get(), loop.loop()), nullptr);
    EXPECT_TRUE(loop.logged("the engine: "));

    conf.addrs[0] = redis.addr();
    rrl_loop_t big = *loop.loop();
    big.event_size = 4096;
    EXPECT_EQ(rrl_engine_new(conf.get(), &big), nullptr);
    EXPECT_TRUE(loop.logged("the engine: an event too large"));
    EXPECT_EQ(loop.contexts(), 0u);
}

TEST_F(EngineTest, ABadCallIsNotMade) {
    start();
    TestCall none({});  // no limit
    EXPECT_FALSE(none.start(engine.get()));
    TestCall c({"k"});
    c.limits[0].algorithm = -1;  // no such algorithm
    EXPECT_FALSE(c.start(engine.get()));
    EXPECT_EQ(gauges().parked, 0u);
}

TEST_F(EngineTest, AReplyReadInTheTurnItsTimeoutFiresDecides) {
    start();
    redis.handler = blackhole_batches;
    TestCall c({"k"});
    ASSERT_TRUE(c.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    redis.last_open()->send(pass_reply(last_batch()));
    // the reply is read first in the turn, then the timer is due
    loop.now_ms += 200;
    ASSERT_TRUE(finish(c));
    EXPECT_TRUE(c.passed());
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_TIMEOUT], 0u);
}

// NULL: no engine (a worker whose init failed): nothing to free
TEST(EngineCApi, FreeingNoneIsNothing) {
    rrl_engine_free(nullptr);
}

}  // namespace
}  // namespace rrl_test
