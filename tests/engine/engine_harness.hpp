// The engine's test harness, without nginx: a single-threaded event loop
// lent to the engine as its rrl_loop_t (timers on a clock the test moves,
// posted events run at the end of each turn, hiredis contexts polled on
// their fds), fake Redis servers in the same thread that answer each
// command with a test's function, and a request's call as the shim makes
// it.
#pragma once

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <poll.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/rrl_engine.h"

namespace rrl_test {

using Argv = std::vector<std::string>;

class TestLoop;

// An event of the loop, in the engine's memory (placement-new'd there).
struct LoopEvent {
    void (*handler)(void* arg) = nullptr;
    void* arg = nullptr;
    bool cancelable = false;
    bool timer = false;
    bool posted = false;
    uint64_t when = 0;
    uint64_t order = 0;  // timers due at once fire in the order set
    TestLoop* loop = nullptr;
};

// A hiredis context attached to the loop.
struct LoopConn {
    redisAsyncContext* ac = nullptr;
    void (*closed)(void* arg, const char* why) = nullptr;
    void* arg = nullptr;
    bool want_write = false;
    TestLoop* loop = nullptr;
};

class TestLoop {
   public:
    TestLoop();
    ~TestLoop();
    TestLoop(const TestLoop&) = delete;
    TestLoop& operator=(const TestLoop&) = delete;

    const rrl_loop_t* loop() const { return &loop_; }

    // One turn: poll (up to poll_ms of real time), the ready fds' handlers,
    // the timers due, then the posted events.
    void turn(int poll_ms = 2);
    // Turns until done() (true) or max_turns (false).
    bool run_until(const std::function<bool()>& done, int max_turns = 500);
    void run(int turns) {
        for (int i = 0; i < turns; i++) turn();
    }
    // The clock moves ms forward: each timer due fires at its time, the
    // posted events after it; then a turn without waiting.
    void advance(uint64_t ms);

    uint64_t now_ms = 1000000;
    bool quitting = false;
    bool fail_attach = false;  // attach() refuses (no nginx connection)
    uint64_t random_value = 0;

    // what the engine counted and logged
    uint64_t errors[RRL_METRICS_ERR_KINDS] = {};
    size_t replies = 0;
    size_t flushes = 0;
    std::vector<std::string> logs;
    bool logged(const std::string& part) const;
    size_t count_logged(const std::string& part) const;

    // the loop's contexts; timers set of cancelable / other events
    size_t contexts() const { return conns_.size(); }
    size_t timers(bool cancelable) const;

    // an fd of the fake servers: events() to poll for, ready(revents)
    int watch(int fd, std::function<short()> events,
              std::function<void(short)> ready);
    void unwatch(int id);

    // the rrl_loop_t hooks
    void timer_add(LoopEvent* ev, uint64_t ms);
    void timer_del(LoopEvent* ev);
    void post(LoopEvent* ev);
    void unpost(LoopEvent* ev);
    void* attach(redisAsyncContext* ac, void (*closed)(void*, const char*),
                 void* arg);
    void flush(LoopConn* c);
    void cleanup(LoopConn* c);

   private:
    struct Watcher {
        int fd;
        std::function<short()> events;
        std::function<void(short)> ready;
    };

    void expire();
    void run_posted();

    rrl_loop_t loop_{};
    std::set<LoopEvent*> timers_;
    std::deque<LoopEvent*> posted_;
    uint64_t order_ = 0;
    std::set<LoopConn*> conns_;
    std::map<int, Watcher> watchers_;
    int next_watcher_ = 0;
};

class FakeRedis;

// A client's connection to a fake server.
struct FakeConn {
    int fd = -1;
    FakeRedis* server = nullptr;
    redisReader* reader = nullptr;
    std::string out;
    int watcher = -1;
    bool close_after = false;  // closed once this turn's replies are out

    void send(const std::string& raw);
    void close();
    bool open() const { return fd >= 0; }
};

// A Redis of the test's making on 127.0.0.1 (or a unix socket): each
// command is answered with handler's RESP ("": no answer, a blackhole).
class FakeRedis {
   public:
    using Handler = std::function<std::string(FakeConn&, const Argv&)>;

    explicit FakeRedis(TestLoop& loop, bool unix_socket = false);
    ~FakeRedis();
    FakeRedis(const FakeRedis&) = delete;
    FakeRedis& operator=(const FakeRedis&) = delete;

    rrl_engine_addr_t addr() const;
    std::string name() const;  // "127.0.0.1:port" as the engine logs it
    unsigned port() const { return port_; }
    const std::string& path() const { return path_; }

    Handler handler;
    std::vector<Argv> commands;  // every command received, in order

    // commands received whose first words are these ("EVALSHA", "SCRIPT
    // LOAD"); batches: EVALSHA of the batch form; releases likewise
    size_t count(const std::string& words) const;
    size_t batches() const;
    size_t releases() const;
    std::vector<Argv> batch_commands() const;

    // connections accepted, and those open now
    size_t accepted() const { return conns_.size(); }
    size_t open_conns() const;
    FakeConn* last_open();
    void close_all();

    void handle(FakeConn& c);  // reads and answers
    void unwatch_conn(FakeConn& c);

   private:
    void accept_one();

    TestLoop& loop_;
    int listen_fd_ = -1;
    int watcher_ = -1;
    unsigned port_ = 0;
    std::string dir_, path_;
    std::vector<std::unique_ptr<FakeConn>> conns_;
};

// What a Redis answers by default: OK to AUTH, SELECT, CLIENT, ASKING;
// SCRIPT LOAD the sha; an EVALSHA batch passes every request; a release
// form is 1; anything else an ERR.
std::string redis_reply(const Argv& argv);

// An EVALSHA batch: each request's keys, in order; empty if not a batch.
bool is_batch(const Argv& argv);
bool is_release(const Argv& argv);
// a batch entry's count "s<n>": a settlement's
bool is_settle_entry(const std::string& count);
std::vector<Argv> batch_requests(const Argv& argv);
// The batch with each run ("*<r>" and a shape) written out as its r
// requests, as the script reads it.
Argv expand_runs(const Argv& argv);
// The batch's reply: each request passed (pass(i, keys)) or rejected,
// with its right count of integers.
std::string batch_reply(const Argv& argv,
                        const std::function<bool(size_t, const Argv&)>& pass);
std::string pass_reply(const Argv& argv);
std::string reject_reply(const Argv& argv);

// RESP builders
std::string bulk(const std::string& s);
std::string array(const std::vector<std::string>& items);
std::string integer(long long v);
// CLUSTER SLOTS naming each range's primary on 127.0.0.1
struct Range {
    unsigned start, end, port;
};
std::string cluster_slots(const std::vector<Range>& ranges);
std::string sentinel_primary(unsigned port);

constexpr int64_t kNow = 1700000000000000;  // the fake Redis TIME, us
constexpr int64_t kRemaining = 7;

// The engine's conf, its strings kept here.
struct EngineConf {
    EngineConf(int mode, const std::vector<const FakeRedis*>& servers);
    rrl_engine_conf_t conf{};
    std::vector<rrl_engine_addr_t> addrs;
    std::string server, sentinel_name = "mymaster", username, password,
                        sentinel_password;
    const rrl_engine_conf_t* get();
};

using Engine = std::unique_ptr<rrl_engine_t, void (*)(rrl_engine_t*)>;
Engine make_engine(EngineConf& conf, TestLoop& loop);

// A request's call, as the shim makes it: a request (rrl_request.h) in the
// caller's memory, its reply there, done() counted.
struct TestCall {
    // overrides[j]: limit j's zone has overrides=on (its own zone id)
    explicit TestCall(const std::vector<std::string>& keys,
                      const std::vector<bool>& overrides = {});
    // a request gone with its call out detaches it (its pool's cleanup)
    ~TestCall();
    TestCall(const TestCall&) = delete;
    TestCall& operator=(const TestCall&) = delete;

    // rrl_engine_call(); false: NULL (not made)
    bool start(rrl_engine_t* engine);
    void detach();

    // each limit's Redis key is keys[j] as given
    std::vector<std::string> keys;
    std::vector<rrl_call_limit_t> limits;
    std::vector<const void*> zones;
    // the request: room for 8 limits at least, so 64 values as ever
    std::vector<std::uint64_t> memory;
    rrl_request_t* request;
    rrl_engine_result_t& result;
    int64_t* values;
    rrl_engine_call_t* call = nullptr;
    int done = 0;

    bool passed() const;
    std::string error() const;
    std::string node() const;
};

}  // namespace rrl_test
