// The engine in Cluster mode, against fake primaries: the slot map from a
// seed (CLUSTER SLOTS), one part a slot and their replies merged in the
// request's order, the release form of the parts that passed when another
// rejected, MOVED, ASK with ASKING, CLUSTERDOWN, seeds in turn, a primary
// lost, and the cap of 1024 addresses a worker connects to.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/engine_harness.hpp"
#include "api/rrl_conf.h"
#include "script/slot.hpp"

namespace rrl_test {
namespace {

// a key whose slot is in [lo, hi]
std::string key_in(unsigned lo, unsigned hi) {
    for (int i = 0;; i++) {
        std::string k = "rl:" + std::to_string(i);
        unsigned slot = rrl::key_slot(k);
        if (slot >= lo && slot <= hi) return k;
    }
}

unsigned slot_of(const std::string& k) {
    return rrl::key_slot(k);
}

class ClusterTest : public ::testing::Test {
   protected:
    void SetUp() override {
        slots = cluster_slots({{0, 8191, a.port()}, {8192, 16383, b.port()}});
        for (FakeRedis* s : {&a, &b, &c}) serve(*s);
    }
    // answers CLUSTER SLOTS with slots, the rest as a Redis
    void serve(FakeRedis& s, FakeRedis::Handler batches = nullptr) {
        s.handler = [this, batches](FakeConn& conn, const Argv& x) {
            if (x[0] == "CLUSTER") return slots;
            if (batches && is_batch(x)) return batches(conn, x);
            return redis_reply(x);
        };
    }
    void start() {
        engine = make_engine(conf, loop);
        ASSERT_TRUE(engine);
        ASSERT_TRUE(loop.run_until(
            [&] { return a.count("SCRIPT LOAD") && b.count("SCRIPT LOAD"); }));
        loop.run(3);
    }
    bool finish(TestCall& call) {
        return loop.run_until([&] { return call.done > 0; });
    }
    std::string redirect(const char* kind, const std::string& key,
                         const FakeRedis& to) {
        return std::string("-") + kind + " " + std::to_string(slot_of(key)) +
               " 127.0.0.1:" + std::to_string(to.port()) + "\r\n";
    }

    TestLoop loop;
    FakeRedis a{loop}, b{loop}, c{loop};
    std::string slots;
    std::string ka = key_in(0, 8191), kb = key_in(8192, 16383);
    EngineConf conf{RRL_SERVER_CLUSTER, {&a}};
    Engine engine{nullptr, rrl_engine_free};
};

TEST_F(ClusterTest, TheSlotMapFromASeedRoutesEachKey) {
    engine = make_engine(conf, loop);
    // no map yet: no call is made (unlogged while the seed is asked)
    TestCall early({ka});
    EXPECT_FALSE(early.start(engine.get()));
    EXPECT_FALSE(loop.logged("no connection to"));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 1u);

    start();
    EXPECT_EQ(a.count("CLUSTER SLOTS"), 1u);
    EXPECT_EQ(b.count("CLUSTER SLOTS"), 0u);
    EXPECT_TRUE(loop.logged("cluster slot map from " + a.name() +
                            ": 16384 of 16384 slots on 2 primaries"));
    rrl_metrics_t m{};
    rrl_engine_gauges(engine.get(), &m);
    EXPECT_EQ(m.connections, 2u);

    TestCall on_a({ka}), on_b({kb});
    ASSERT_TRUE(on_a.start(engine.get()));
    ASSERT_TRUE(on_b.start(engine.get()));
    ASSERT_TRUE(finish(on_a) && finish(on_b));
    EXPECT_TRUE(on_a.passed());
    EXPECT_TRUE(on_b.passed());
    ASSERT_EQ(a.batches(), 1u);
    ASSERT_EQ(b.batches(), 1u);
    EXPECT_EQ(batch_requests(a.batch_commands()[0]), (std::vector<Argv>{{ka}}));
    EXPECT_EQ(batch_requests(b.batch_commands()[0]), (std::vector<Argv>{{kb}}));
}

TEST_F(ClusterTest, APartASlotTheRepliesMergedInTheRequestsOrder) {
    start();
    TestCall call({kb, ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    ASSERT_EQ(call.result.nvalues, 10u);
    EXPECT_EQ(call.values[1], kNow);
    EXPECT_EQ(call.values[3], kRemaining);
    EXPECT_EQ(call.values[7], kRemaining);
    EXPECT_EQ(a.releases() + b.releases(), 0u);
}

TEST_F(ClusterTest, WhereOnePartRejectsThePartsThatPassedAreReleased) {
    serve(b, [](FakeConn&, const Argv& x) { return reject_reply(x); });
    start();
    TestCall call({kb, ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_OK);
    EXPECT_EQ(call.values[0], 0);      // the request is rejected
    EXPECT_EQ(call.values[2], 0);      // limit 0, on b: rejected
    EXPECT_EQ(call.values[2 + 4], 1);  // limit 1, on a: passed
    ASSERT_TRUE(loop.run_until([&] { return a.releases() == 1; }));
    EXPECT_EQ(b.releases(), 0u);
    for (const Argv& x : a.commands) {
        if (!is_release(x)) continue;
        EXPECT_EQ(x, (Argv{"EVALSHA", rrl_script_sha1(), "1", ka, "release",
                           std::to_string(kNow), "", "sliding_window", "10",
                           "1000", "0", "1"}));
    }
}

TEST_F(ClusterTest, APartFailedReleasesTheOthers) {
    serve(b, [](FakeConn&, const Argv&) {
        return std::string("-ERR b is broken\r\n");
    });
    start();
    TestCall call({ka, kb});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error(), "ERR b is broken");
    EXPECT_EQ(call.node(), b.name());
    ASSERT_TRUE(loop.run_until([&] { return a.releases() == 1; }));
}

TEST_F(ClusterTest, MovedSendsTheBatchToTheNewPrimaryAndRefreshesTheMap) {
    start();
    serve(a, [&](FakeConn&, const Argv&) { return redirect("MOVED", ka, b); });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    EXPECT_EQ(a.batches(), 1u);
    EXPECT_EQ(b.batches(), 1u);
    EXPECT_EQ(b.batch_commands()[0], a.batch_commands()[0]);
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 0u);

    // the slot is b's now, before the map is read again
    TestCall next({ka});
    ASSERT_TRUE(next.start(engine.get()));
    ASSERT_TRUE(finish(next));
    EXPECT_EQ(a.batches(), 1u);
    EXPECT_EQ(b.batches(), 2u);
    loop.advance(100);  // asked at most every 100 ms
    ASSERT_TRUE(loop.run_until([&] {
        return a.count("CLUSTER SLOTS") + b.count("CLUSTER SLOTS") == 2;
    }));
}

TEST_F(ClusterTest, AskSendsAskingThenTheBatchToANodeOutOfTheMap) {
    slots = cluster_slots({{0, 16383, a.port()}});
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return a.count("SCRIPT LOAD") == 1; }));
    loop.run(3);
    serve(a, [&](FakeConn&, const Argv&) { return redirect("ASK", ka, c); });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    ASSERT_EQ(c.batches(), 1u);
    // ASKING right before the batch, on c's connection set up for it
    for (size_t i = 0; i < c.commands.size(); i++) {
        if (is_batch(c.commands[i])) {
            ASSERT_GT(i, 0u);
            EXPECT_EQ(c.commands[i - 1], (Argv{"ASKING"}));
        }
    }
    // the map is not changed: the next call goes to a, c is closed
    serve(a);
    TestCall next({ka});
    ASSERT_TRUE(next.start(engine.get()));
    ASSERT_TRUE(finish(next));
    EXPECT_EQ(a.batches(), 2u);
    EXPECT_EQ(c.batches(), 1u);
    ASSERT_TRUE(loop.run_until([&] { return c.open_conns() == 0; }));
    EXPECT_TRUE(loop.logged(c.name() + " is no more in use, closing"));
}

TEST_F(ClusterTest, ARedirectOnlyOnce) {
    start();
    serve(a, [&](FakeConn&, const Argv&) { return redirect("MOVED", ka, b); });
    serve(b, [&](FakeConn&, const Argv&) { return redirect("MOVED", ka, a); });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error().substr(0, 5), "MOVED");
    EXPECT_EQ(call.node(), b.name());
    EXPECT_EQ(a.batches() + b.batches(), 2u);
}

TEST_F(ClusterTest, ARedirectToANameIsNotFollowed) {
    start();
    serve(a, [&](FakeConn&, const Argv&) {
        return "-MOVED " + std::to_string(slot_of(ka)) + " redis-b:6379\r\n";
    });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error(),
              "MOVED " + std::to_string(slot_of(ka)) + " redis-b:6379");
    EXPECT_TRUE(loop.logged("MOVED from " + a.name() +
                            " names \"redis-b\", not a numeric address"));
}

TEST_F(ClusterTest, ClusterdownFailsTheCallAndAsksForTheMap) {
    start();
    serve(a, [](FakeConn&, const Argv&) {
        return std::string("-CLUSTERDOWN The cluster is down\r\n");
    });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.error(), "CLUSTERDOWN The cluster is down");
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] {
        return a.count("CLUSTER SLOTS") + b.count("CLUSTER SLOTS") == 2;
    }));
}

TEST_F(ClusterTest, APrimaryLostAsksForTheMap) {
    start();
    b.close_all();
    ASSERT_TRUE(loop.run_until(
        [&] { return loop.logged("connection to " + b.name() + " lost"); }));
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] {
        return a.count("CLUSTER SLOTS") + b.count("CLUSTER SLOTS") == 2;
    }));
}

TEST_F(ClusterTest, SeedsAreAskedInTurn) {
    FakeRedis standalone(loop);
    standalone.handler = [](FakeConn&, const Argv& x) {
        if (x[0] == "CLUSTER") {
            return std::string(
                "-ERR This instance has cluster support disabled\r\n");
        }
        return redis_reply(x);
    };
    EngineConf seeds(RRL_SERVER_CLUSTER, {&standalone, &a});
    engine = make_engine(seeds, loop);
    ASSERT_TRUE(
        loop.run_until([&] { return standalone.count("CLUSTER SLOTS") == 1; }));
    loop.run(3);
    EXPECT_TRUE(loop.logged("CLUSTER SLOTS on " + standalone.name()));
    EXPECT_EQ(a.count("CLUSTER SLOTS"), 0u);
    loop.advance(100);  // a failure is retried soon, with the next seed
    ASSERT_TRUE(loop.run_until(
        [&] { return a.count("SCRIPT LOAD") && b.count("SCRIPT LOAD"); }));
    loop.run(3);
    EXPECT_EQ(a.count("CLUSTER SLOTS"), 1u);
    TestCall call({kb});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    // a seed out of the map is closed once it has answered
    ASSERT_TRUE(loop.run_until([&] { return standalone.open_conns() == 0; }));
}

TEST_F(ClusterTest, APrimaryNamedByANameIsLeftOut) {
    slots = array({array({integer(0), integer(8191),
                          array({bulk("127.0.0.1"), integer(a.port())})}),
                   array({integer(8192), integer(16383),
                          array({bulk("redis-b"), integer(6379)})})});
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return a.count("SCRIPT LOAD") == 1; }));
    loop.run(3);
    EXPECT_TRUE(loop.logged("CLUSTER SLOTS on " + a.name() +
                            " names a primary by \"redis-b\", not by a "
                            "numeric address: slots 8192-16383 are left out"));
    TestCall on_b({kb});
    EXPECT_FALSE(on_b.start(engine.get()));
    TestCall on_a({ka});
    ASSERT_TRUE(on_a.start(engine.get()));
    ASSERT_TRUE(finish(on_a));
    EXPECT_TRUE(on_a.passed());
}

TEST_F(ClusterTest, AtMost1024AddressesThenANodeOutOfUseIsTakenOver) {
    // 1024 primaries besides the seed: one too many
    std::vector<Range> many;
    for (unsigned i = 0; i < 1024; i++) many.push_back({i, i, 20000 + i});
    many.push_back({1024, 16383, a.port()});
    slots = cluster_slots(many);
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return a.count("CLUSTER SLOTS") == 1; }));
    // a reply of 1025 ranges takes a few reads
    EXPECT_TRUE(loop.run_until([&] {
        return loop.logged(
            "1024 addresses in use, none idle: "
            "127.0.0.1:21023 is not connected");
    }));
    EXPECT_FALSE(loop.logged("cluster slot map from"));

    // a map of the seed alone, then a MOVED to b: b takes a node over
    slots = cluster_slots({{0, 16383, a.port()}});
    loop.advance(100);
    ASSERT_TRUE(loop.run_until([&] { return loop.logged("slot map from"); }));
    ASSERT_TRUE(loop.run_until([&] { return a.count("SCRIPT LOAD") == 1; }));
    loop.run(3);
    serve(a, [&](FakeConn&, const Argv&) { return redirect("MOVED", ka, b); });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    EXPECT_EQ(b.batches(), 1u);
}

TEST_F(ClusterTest, APartTimedOutReleasesThePartsThatPassed) {
    serve(b, [](FakeConn&, const Argv&) { return std::string(); });
    start();
    TestCall call({ka, kb});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(loop.run_until([&] { return a.batches() && b.batches(); }));
    loop.run(3);
    loop.advance(200);
    ASSERT_EQ(call.done, 1);
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error(), "timed out after 200 ms");
    EXPECT_EQ(call.node(), b.name());  // the part that was not answered
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_TIMEOUT], 1u);
    ASSERT_TRUE(loop.run_until([&] { return a.releases() == 1; }));
    EXPECT_EQ(b.releases(), 0u);
}

TEST_F(ClusterTest, ARangeWithoutAHostIsTheNodeAsked) {
    // Redis 7 names itself "" (or "?") when it knows no address of its own
    slots = array({array(
        {integer(0), integer(16383), array({bulk(""), integer(a.port())})})});
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return loop.logged("slot map from"); }));
    EXPECT_TRUE(loop.logged("16384 of 16384 slots on 1 primaries"));
    loop.run(3);
    TestCall call({kb});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_TRUE(call.passed());
    EXPECT_EQ(a.batches(), 1u);
}

TEST_F(ClusterTest, ClusterSlotsUnansweredTimesOut) {
    serve(a);
    a.handler = [](FakeConn&, const Argv& x) {
        return x[0] == "CLUSTER" ? std::string() : redis_reply(x);
    };
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return a.count("CLUSTER SLOTS") == 1; }));
    loop.advance(399);  // connect_timeout + timeout
    EXPECT_FALSE(loop.logged("timed out"));
    loop.advance(1);
    EXPECT_TRUE(loop.logged("CLUSTER SLOTS on " + a.name() + " timed out"));
    loop.advance(100);  // asked again soon
    ASSERT_TRUE(loop.run_until([&] { return a.count("CLUSTER SLOTS") == 2; }));
}

// A request before the first slot map fails (the fail mode), unlogged while
// the map's question is out: its answer, or why none comes (a refused AUTH,
// a timeout), is what the worker's one failure line of that second says.
// Once the question has failed, a request's failure is logged again.
TEST_F(ClusterTest, NoSlotMapYetIsNotLoggedWhileItsQuestionIsOut) {
    a.handler = [](FakeConn&, const Argv& x) {
        return x[0] == "CLUSTER" ? std::string() : redis_reply(x);
    };
    engine = make_engine(conf, loop);
    ASSERT_TRUE(loop.run_until([&] { return a.count("CLUSTER SLOTS") == 1; }));
    TestCall asking({ka});
    EXPECT_FALSE(asking.start(engine.get()));
    EXPECT_FALSE(loop.logged("no connection to"));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 1u);

    loop.advance(400);  // connect_timeout + timeout: the question failed
    ASSERT_TRUE(loop.logged("CLUSTER SLOTS on " + a.name() + " timed out"));
    TestCall failed({ka});
    EXPECT_FALSE(failed.start(engine.get()));
    EXPECT_TRUE(loop.logged("no connection to"));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CONNECTION], 2u);
}

TEST_F(ClusterTest, AMovedOfAnotherSlotIsNotFollowed) {
    start();
    serve(a, [&](FakeConn&, const Argv&) { return redirect("MOVED", kb, b); });
    TestCall call({ka});
    ASSERT_TRUE(call.start(engine.get()));
    ASSERT_TRUE(finish(call));
    EXPECT_EQ(call.result.rc, RRL_ERROR);
    EXPECT_EQ(call.error().substr(0, 6), "MOVED ");
    EXPECT_EQ(b.batches(), 0u);
}

TEST_F(ClusterTest, ACallRefusedByOneNodeAbandonsTheProbeOfAnother) {
    conf.conf.max_failures = 1;
    conf.conf.cooldown_ms = 1000;
    auto fail = [](FakeConn&, const Argv&) {
        return std::string("-ERR down\r\n");
    };
    serve(a, fail);
    serve(b, fail);
    start();
    TestCall fa({ka});  // a opens now, b 500 ms later
    ASSERT_TRUE(fa.start(engine.get()));
    ASSERT_TRUE(finish(fa));
    loop.advance(500);
    TestCall fb({kb});
    ASSERT_TRUE(fb.start(engine.get()));
    ASSERT_TRUE(finish(fb));
    loop.advance(500);

    // a grants its probe, b refuses: the call is not made, a's probe freed
    serve(a);
    TestCall both({ka, kb});
    EXPECT_FALSE(both.start(engine.get()));
    EXPECT_EQ(loop.errors[RRL_METRICS_ERR_CIRCUIT_OPEN], 1u);
    TestCall probe({ka});
    ASSERT_TRUE(probe.start(engine.get()));
    ASSERT_TRUE(finish(probe));
    EXPECT_TRUE(probe.passed());
}

}  // namespace
}  // namespace rrl_test
