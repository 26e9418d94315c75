// The engine's test harness itself, with plain hiredis async on its loop:
// the fake server's answers, a blackhole, a closed connection, timers on
// the test's clock and posted events at the end of a turn.
#include "tests/engine/engine_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rrl_test {
namespace {

struct Client {
    redisAsyncContext* ac = nullptr;
    void* conn = nullptr;
    std::vector<std::string> replies;  // "<type>:<text>", "null"
    std::string closed_why;
    bool closed = false;
};

void on_closed(void* arg, const char* why) {
    auto* c = static_cast<Client*>(arg);
    c->closed = true;
    c->closed_why = why;
    c->ac = nullptr;
}

void on_reply(redisAsyncContext*, void* reply, void* privdata) {
    auto* c = static_cast<Client*>(privdata);
    auto* r = static_cast<redisReply*>(reply);
    if (r == nullptr) {
        c->replies.push_back("null");
    } else if (r->type == REDIS_REPLY_ARRAY) {
        c->replies.push_back("array:" + std::to_string(r->elements));
    } else if (r->type == REDIS_REPLY_INTEGER) {
        c->replies.push_back("int:" + std::to_string(r->integer));
    } else {
        c->replies.push_back(std::to_string(r->type) + ":" +
                             std::string(r->str, r->len));
    }
}

void connect(TestLoop& loop, FakeRedis& server, Client& c) {
    rrl_engine_addr_t a = server.addr();
    c.ac = a.unix_path ? redisAsyncConnectUnix(a.unix_path)
                       : redisAsyncConnect(a.host, static_cast<int>(a.port));
    ASSERT_TRUE(c.ac && c.ac->err == 0);
    c.conn = loop.loop()->attach(c.ac, on_closed, &c);
    ASSERT_NE(c.conn, nullptr);
}

void command(Client& c, const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    for (const std::string& a : args) {
        argv.push_back(a.data());
        argvlen.push_back(a.size());
    }
    ASSERT_EQ(
        redisAsyncCommandArgv(c.ac, on_reply, &c, static_cast<int>(argv.size()),
                              argv.data(), argvlen.data()),
        REDIS_OK);
}

class HarnessTest : public ::testing::TestWithParam<bool> {};

TEST_P(HarnessTest, FakeServerAnswersEachCommandInOrder) {
    TestLoop loop;
    FakeRedis server(loop, GetParam());
    Client c;
    connect(loop, server, c);

    command(c, {"AUTH", "secret"});
    command(c, {"SCRIPT", "LOAD", "return 1"});
    command(c, {"EVALSHA", "sha",   "3", "{a}1", "{a}2",
                "{b}",     "batch", "",  "1",    "sliding_window",
                "10",      "1000",  "0", "2",    "1",
                "1",       "1",     "1", "1",    "1",
                "1"});
    command(c, {"NOPE"});
    ASSERT_TRUE(loop.run_until([&] { return c.replies.size() == 4; }));

    EXPECT_EQ(c.replies[0], "5:OK");
    EXPECT_EQ(c.replies[1], "1:" + std::string(rrl_script_sha1()));
    // two requests: 2 + 4 * 2 and 2 + 4 integers
    EXPECT_EQ(c.replies[2], "array:16");
    EXPECT_EQ(c.replies[3], "6:ERR unknown command 'NOPE'");
    EXPECT_EQ(server.count("SCRIPT LOAD"), 1u);
    EXPECT_EQ(server.count("SCRIPT"), 1u);
    EXPECT_EQ(server.batches(), 1u);
    std::vector<Argv> requests = batch_requests(server.batch_commands()[0]);
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0], (Argv{"{a}1", "{a}2"}));
    EXPECT_EQ(requests[1], (Argv{"{b}"}));

    redisAsyncFree(c.ac);
    EXPECT_TRUE(c.closed);
    EXPECT_EQ(loop.contexts(), 0u);
}

INSTANTIATE_TEST_SUITE_P(TcpAndUnix, HarnessTest, ::testing::Bool());

TEST(Harness, BlackholeAndClose) {
    TestLoop loop;
    FakeRedis server(loop);
    server.handler = [](FakeConn&, const Argv&) { return std::string(); };
    Client c;
    connect(loop, server, c);
    command(c, {"PING"});
    ASSERT_TRUE(loop.run_until([&] { return server.commands.size() == 1; }));
    loop.run(5);
    EXPECT_TRUE(c.replies.empty());

    // a late answer by hand, then the server closes
    server.last_open()->send("+PONG\r\n");
    ASSERT_TRUE(loop.run_until([&] { return c.replies.size() == 1; }));
    EXPECT_EQ(c.replies[0], "5:PONG");

    command(c, {"PING"});
    ASSERT_TRUE(loop.run_until([&] { return server.commands.size() == 2; }));
    server.close_all();
    ASSERT_TRUE(loop.run_until([&] { return c.closed; }));
    EXPECT_EQ(c.replies.back(), "null");
    EXPECT_EQ(server.open_conns(), 0u);
    EXPECT_EQ(server.accepted(), 1u);
}

TEST(Harness, RefusedConnectionIsClosed) {
    TestLoop loop;
    unsigned port;
    {
        FakeRedis gone(loop);
        port = gone.port();
    }
    Client c;
    c.ac = redisAsyncConnect("127.0.0.1", static_cast<int>(port));
    ASSERT_TRUE(c.ac);
    if (c.ac->err) {  // refused at once
        redisAsyncFree(c.ac);
        return;
    }
    ASSERT_NE(loop.loop()->attach(c.ac, on_closed, &c), nullptr);
    command(c, {"PING"});
    ASSERT_TRUE(loop.run_until([&] { return c.closed; }));
    EXPECT_EQ(c.replies, std::vector<std::string>{"null"});
}

struct Fired {
    std::vector<int> order;
};

Fired* fired;
void fire1(void* arg) {
    fired->order.push_back(*static_cast<int*>(arg));
}

TEST(Harness, TimersOnTheTestsClockPostedEventsAtTheEnd) {
    TestLoop loop;
    const rrl_loop_t* l = loop.loop();
    Fired f;
    fired = &f;
    alignas(16) unsigned char a[64], b[64], p[64];
    ASSERT_LE(l->event_size, sizeof(a));
    int one = 1, two = 2, three = 3;
    l->event_init(a, fire1, &one, 1);
    l->event_init(b, fire1, &two, 0);
    l->event_init(p, fire1, &three, 0);

    l->timer_add(a, 100);
    l->timer_add(b, 50);
    EXPECT_TRUE(l->timer_set(a));
    EXPECT_EQ(loop.timers(true), 1u);
    EXPECT_EQ(loop.timers(false), 1u);
    loop.advance(49);
    EXPECT_TRUE(f.order.empty());
    l->post(p);
    l->post(p);  // once
    loop.advance(1);
    EXPECT_EQ(f.order, (std::vector<int>{2, 3}));
    l->timer_add(a, 100);  // re-armed
    loop.advance(99);
    EXPECT_EQ(f.order.size(), 2u);
    loop.advance(1);
    EXPECT_EQ(f.order, (std::vector<int>{2, 3, 1}));
    EXPECT_FALSE(l->timer_set(a));

    l->post(p);
    l->unpost(p);
    l->timer_add(b, 10);
    l->timer_del(b);
    loop.advance(20);
    EXPECT_EQ(f.order.size(), 3u);
    EXPECT_EQ(l->msec(), loop.now_ms);
    EXPECT_EQ(l->clock(), static_cast<int64_t>(loop.now_ms) * 1000);
}

}  // namespace
}  // namespace rrl_test
