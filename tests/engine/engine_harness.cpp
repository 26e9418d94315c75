#include "tests/engine/engine_harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "api/rrl_conf.h"
#include "tests/support/call_limit.hpp"

namespace rrl_test {

namespace {

LoopEvent* event(void* ev) {
    return static_cast<LoopEvent*>(ev);
}

TestLoop* current = nullptr;  // the logger's

void log_to_loop(void*, int level, const char* msg) {
    if (current) {
        current->logs.push_back(std::to_string(level) + " " + msg);
    }
}

void set_nonblocking(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// hiredis' I/O hooks: reads are always polled (as nginx registers both
// directions at once), writes when hiredis has output
void ev_add_read(void*) {}
void ev_del_read(void*) {}
void ev_add_write(void* data) {
    static_cast<LoopConn*>(data)->want_write = true;
}
void ev_del_write(void* data) {
    static_cast<LoopConn*>(data)->want_write = false;
}
void ev_cleanup(void* data) {
    auto* c = static_cast<LoopConn*>(data);
    c->loop->cleanup(c);
}

}  // namespace

TestLoop::TestLoop() {
    // hiredis writes with write(): a closed peer must not kill the tests
    signal(SIGPIPE, SIG_IGN);
    current = this;
    rrl_set_logger(log_to_loop, nullptr);

    loop_.event_size = sizeof(LoopEvent);
    loop_.event_init = [](void* ev, void (*handler)(void*), void* arg,
                          int cancelable) {
        auto* e = new (ev) LoopEvent();
        e->handler = handler;
        e->arg = arg;
        e->cancelable = cancelable != 0;
        e->loop = current;
    };
    loop_.timer_add = [](void* ev, uint64_t ms) {
        event(ev)->loop->timer_add(event(ev), ms);
    };
    loop_.timer_del = [](void* ev) { event(ev)->loop->timer_del(event(ev)); };
    loop_.timer_set = [](const void* ev) {
        return static_cast<const LoopEvent*>(ev)->timer ? 1 : 0;
    };
    loop_.set_cancelable = [](void* ev, int on) {
        event(ev)->cancelable = on != 0;
    };
    loop_.post = [](void* ev) { event(ev)->loop->post(event(ev)); };
    loop_.unpost = [](void* ev) { event(ev)->loop->unpost(event(ev)); };
    loop_.msec = []() { return current->now_ms; };
    loop_.clock = []() { return static_cast<int64_t>(current->now_ms) * 1000; };
    loop_.random = []() { return current->random_value; };
    loop_.quitting = []() { return current->quitting ? 1 : 0; };
    loop_.attach = [](redisAsyncContext* ac, void (*closed)(void*, const char*),
                      void* arg) { return current->attach(ac, closed, arg); };
    loop_.flush = [](void* conn) {
        current->flush(static_cast<LoopConn*>(conn));
    };
    loop_.error = [](int kind) {
        if (kind >= 0 && kind < RRL_METRICS_ERR_KINDS) current->errors[kind]++;
    };
    loop_.reply = [](size_t, uint64_t, int) { current->replies++; };
}

TestLoop::~TestLoop() {
    if (current == this) {
        rrl_set_logger(nullptr, nullptr);
        current = nullptr;
    }
}

bool TestLoop::logged(const std::string& part) const {
    return count_logged(part) > 0;
}

size_t TestLoop::count_logged(const std::string& part) const {
    return static_cast<size_t>(
        std::count_if(logs.begin(), logs.end(), [&](const std::string& l) {
            return l.find(part) != std::string::npos;
        }));
}

size_t TestLoop::timers(bool cancelable) const {
    return static_cast<size_t>(std::count_if(
        timers_.begin(), timers_.end(),
        [&](LoopEvent* e) { return e->cancelable == cancelable; }));
}

void TestLoop::timer_add(LoopEvent* ev, uint64_t ms) {
    ev->timer = true;
    ev->when = now_ms + ms;
    ev->order = order_++;
    timers_.insert(ev);
}

void TestLoop::timer_del(LoopEvent* ev) {
    ev->timer = false;
    timers_.erase(ev);
}

void TestLoop::post(LoopEvent* ev) {
    if (ev->posted) return;
    ev->posted = true;
    posted_.push_back(ev);
}

void TestLoop::unpost(LoopEvent* ev) {
    if (!ev->posted) return;
    ev->posted = false;
    posted_.erase(std::find(posted_.begin(), posted_.end(), ev));
}

void* TestLoop::attach(redisAsyncContext* ac,
                       void (*closed)(void*, const char*), void* arg) {
    if (fail_attach) return nullptr;
    auto* c = new LoopConn();
    c->ac = ac;
    c->closed = closed;
    c->arg = arg;
    c->loop = this;
    ac->ev.data = c;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    conns_.insert(c);
    return c;
}

void TestLoop::flush(LoopConn* c) {
    flushes++;
    // as nginx: written at once only once the socket is known writable
    if (conns_.count(c) && c->want_write &&
        (c->ac->c.flags & REDIS_CONNECTED)) {
        redisAsyncHandleWrite(c->ac);
    }
}

// the context is being freed, by whoever: the engine learns why
void TestLoop::cleanup(LoopConn* c) {
    conns_.erase(c);
    redisAsyncContext* ac = c->ac;
    ac->ev.data = nullptr;
    c->closed(c->arg, ac->errstr[0] ? ac->errstr : "closed");
    delete c;
}

int TestLoop::watch(int fd, std::function<short()> events,
                    std::function<void(short)> ready) {
    int id = next_watcher_++;
    watchers_[id] = Watcher{fd, std::move(events), std::move(ready)};
    return id;
}

void TestLoop::unwatch(int id) {
    watchers_.erase(id);
}

void TestLoop::turn(int poll_ms) {
    std::vector<pollfd> fds;
    std::vector<LoopConn*> conns;
    std::vector<int> ids;

    for (LoopConn* c : conns_) {
        short events = POLLIN;
        if (c->want_write || !(c->ac->c.flags & REDIS_CONNECTED)) {
            events |= POLLOUT;
        }
        fds.push_back(pollfd{c->ac->c.fd, events, 0});
        conns.push_back(c);
    }
    for (auto& [id, w] : watchers_) {
        fds.push_back(pollfd{w.fd, w.events(), 0});
        ids.push_back(id);
    }

    if (poll(fds.data(), fds.size(), poll_ms) > 0) {
        for (size_t i = 0; i < fds.size(); i++) {
            short re = fds[i].revents;
            if (re == 0) continue;
            if (i < conns.size()) {
                LoopConn* c = conns[i];
                // freed meanwhile (a new one at the same address has
                // another fd, or has not been polled)
                if (!conns_.count(c) || c->ac->c.fd != fds[i].fd) continue;
                redisAsyncContext* ac = c->ac;
                if (re & (POLLIN | POLLHUP | POLLERR)) {
                    redisAsyncHandleRead(ac);
                }
                if (conns_.count(c) && c->ac == ac && (re & POLLOUT) &&
                    (c->want_write || !(ac->c.flags & REDIS_CONNECTED))) {
                    redisAsyncHandleWrite(ac);
                }
            } else {
                auto w = watchers_.find(ids[i - conns.size()]);
                if (w != watchers_.end()) w->second.ready(re);
            }
        }
    }

    expire();
    run_posted();
}

bool TestLoop::run_until(const std::function<bool()>& done, int max_turns) {
    for (int i = 0; i < max_turns; i++) {
        if (done()) return true;
        turn();
    }
    return done();
}

void TestLoop::expire() {
    for (;;) {
        LoopEvent* first = nullptr;
        for (LoopEvent* e : timers_) {
            if (e->when <= now_ms &&
                (!first || e->when < first->when ||
                 (e->when == first->when && e->order < first->order))) {
                first = e;
            }
        }
        if (!first) return;
        timer_del(first);
        first->handler(first->arg);
    }
}

void TestLoop::run_posted() {
    while (!posted_.empty()) {
        LoopEvent* e = posted_.front();
        posted_.pop_front();
        e->posted = false;
        e->handler(e->arg);
    }
}

void TestLoop::advance(uint64_t ms) {
    uint64_t target = now_ms + ms;
    for (;;) {
        uint64_t next = target;
        for (LoopEvent* e : timers_) next = std::min(next, e->when);
        if (next >= target) break;
        now_ms = std::max(now_ms, next);
        expire();
        run_posted();
    }
    now_ms = target;
    expire();
    run_posted();
    turn(0);
}

// the fake servers

void FakeConn::send(const std::string& raw) {
    out += raw;
    while (fd >= 0 && !out.empty()) {
        ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
        if (n <= 0) break;
        out.erase(0, static_cast<size_t>(n));
    }
}

void FakeConn::close() {
    if (fd < 0) return;
    server->unwatch_conn(*this);
    ::close(fd);
    fd = -1;
    redisReaderFree(reader);
    reader = nullptr;
}

FakeRedis::FakeRedis(TestLoop& loop, bool unix_socket) : loop_(loop) {
    handler = [](FakeConn&, const Argv& argv) { return redis_reply(argv); };

    if (unix_socket) {
        char tmpl[] = "/tmp/rrl-engine-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
        dir_ = tmpl;
        path_ = dir_ + "/redis.sock";
        listen_fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path_.c_str(), sizeof(sa.sun_path) - 1);
        if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa))) {
            throw std::runtime_error("bind");
        }
    } else {
        listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
        int on = 1;
        setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(sa);
        if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), len) ||
            getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len)) {
            throw std::runtime_error("bind");
        }
        port_ = ntohs(sa.sin_port);
    }
    listen(listen_fd_, 128);
    set_nonblocking(listen_fd_);
    watcher_ = loop_.watch(
        listen_fd_, [] { return short(POLLIN); },
        [this](short) { accept_one(); });
}

FakeRedis::~FakeRedis() {
    close_all();
    if (watcher_ >= 0) loop_.unwatch(watcher_);
    ::close(listen_fd_);
    if (!path_.empty()) {
        unlink(path_.c_str());
        rmdir(dir_.c_str());
    }
}

rrl_engine_addr_t FakeRedis::addr() const {
    rrl_engine_addr_t a{};
    if (path_.empty()) {
        a.host = "127.0.0.1";
        a.port = port_;
    } else {
        a.unix_path = path_.c_str();
    }
    return a;
}

std::string FakeRedis::name() const {
    return path_.empty() ? "127.0.0.1:" + std::to_string(port_)
                         : "unix:" + path_;
}

void FakeRedis::accept_one() {
    for (;;) {
        int fd = accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        set_nonblocking(fd);
        auto c = std::make_unique<FakeConn>();
        c->fd = fd;
        c->server = this;
        c->reader = redisReaderCreate();
        FakeConn* p = c.get();
        c->watcher = loop_.watch(
            fd, [p] { return short(POLLIN | (p->out.empty() ? 0 : POLLOUT)); },
            [this, p](short) { handle(*p); });
        conns_.push_back(std::move(c));
    }
}

void FakeRedis::unwatch_conn(FakeConn& c) {
    loop_.unwatch(c.watcher);
    c.watcher = -1;
}

void FakeRedis::handle(FakeConn& c) {
    char buf[65536];
    bool eof = false;
    for (;;) {
        ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n > 0) {
            redisReaderFeed(c.reader, buf, static_cast<size_t>(n));
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
        break;
    }
    for (;;) {
        void* r = nullptr;
        if (redisReaderGetReply(c.reader, &r) != REDIS_OK || r == nullptr) {
            break;
        }
        auto* rr = static_cast<redisReply*>(r);
        Argv argv;
        if (rr->type == REDIS_REPLY_ARRAY) {
            for (size_t i = 0; i < rr->elements; i++) {
                argv.emplace_back(rr->element[i]->str, rr->element[i]->len);
            }
        }
        freeReplyObject(rr);
        commands.push_back(argv);
        std::string reply = handler(c, argv);
        if (!c.open()) return;
        c.send(reply);
    }
    c.send("");
    if (eof || (c.close_after && c.out.empty())) c.close();
}

size_t FakeRedis::count(const std::string& words) const {
    size_t n =
        1 + static_cast<size_t>(std::count(words.begin(), words.end(), ' '));
    return static_cast<size_t>(
        std::count_if(commands.begin(), commands.end(), [&](const Argv& a) {
            if (a.size() < n) return false;
            std::string joined = a[0];
            for (size_t i = 1; i < n; i++) joined += " " + a[i];
            return joined == words;
        }));
}

size_t FakeRedis::batches() const {
    return batch_commands().size();
}

size_t FakeRedis::releases() const {
    return static_cast<size_t>(
        std::count_if(commands.begin(), commands.end(), is_release));
}

std::vector<Argv> FakeRedis::batch_commands() const {
    std::vector<Argv> out;
    for (const Argv& a : commands) {
        if (is_batch(a)) out.push_back(a);
    }
    return out;
}

size_t FakeRedis::open_conns() const {
    return static_cast<size_t>(std::count_if(
        conns_.begin(), conns_.end(), [](const auto& c) { return c->open(); }));
}

FakeConn* FakeRedis::last_open() {
    for (auto it = conns_.rbegin(); it != conns_.rend(); ++it) {
        if ((*it)->open()) return it->get();
    }
    return nullptr;
}

void FakeRedis::close_all() {
    for (auto& c : conns_) c->close();
}

// replies

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::string array(const std::vector<std::string>& items) {
    std::string out = "*" + std::to_string(items.size()) + "\r\n";
    for (const std::string& i : items) out += i;
    return out;
}

std::string integer(long long v) {
    return ":" + std::to_string(v) + "\r\n";
}

namespace {

size_t nkeys(const Argv& argv) {
    if (argv.size() < 3 || argv[0] != "EVALSHA") return SIZE_MAX;
    char* end = nullptr;
    unsigned long n = std::strtoul(argv[2].c_str(), &end, 10);
    return (*end == '\0' && 3 + n < argv.size()) ? n : SIZE_MAX;
}

// a batch entry's count: "<n>", or "s<n>" for a settlement
size_t entry_limits(const std::string& count) {
    return std::stoul(is_settle_entry(count) ? count.substr(1) : count);
}

}  // namespace

bool is_settle_entry(const std::string& count) {
    return !count.empty() && count[0] == 's';
}

bool is_batch(const Argv& argv) {
    size_t n = nkeys(argv);
    return n != SIZE_MAX && argv[3 + n] == "batch";
}

bool is_release(const Argv& argv) {
    size_t n = nkeys(argv);
    return n != SIZE_MAX && argv[3 + n] == "release";
}

Argv expand_runs(const Argv& argv) {
    if (!is_batch(argv)) return argv;
    size_t n = nkeys(argv);
    size_t zones = std::stoul(argv.at(3 + n + 2));
    size_t a = 3 + n + 3 + 4 * zones;
    Argv out(argv.begin(), argv.begin() + a);
    while (a < argv.size()) {
        size_t times = 1;
        if (argv[a][0] == '*') times = std::stoul(argv[a++].substr(1));
        size_t width = 1 + 2 * entry_limits(argv.at(a));
        for (size_t r = 0; r < times; r++) {
            out.insert(out.end(), argv.begin() + a, argv.begin() + a + width);
        }
        a += width;
    }
    return out;
}

std::vector<Argv> batch_requests(const Argv& runs) {
    std::vector<Argv> requests;
    if (!is_batch(runs)) return requests;
    Argv argv = expand_runs(runs);
    size_t n = nkeys(argv);
    size_t zones = std::stoul(argv.at(3 + n + 2));
    size_t a = 3 + n + 3 + 4 * zones, k = 3;
    while (a < argv.size()) {
        size_t limits = entry_limits(argv[a]);
        requests.emplace_back(argv.begin() + k, argv.begin() + k + limits);
        k += limits;
        a += 1 + 2 * limits;
    }
    return requests;
}

std::string batch_reply(const Argv& runs,
                        const std::function<bool(size_t, const Argv&)>& pass) {
    Argv argv = expand_runs(runs);
    std::vector<std::string> items;
    std::vector<Argv> requests = batch_requests(argv);
    // each limit's zone, whose algorithm tells whether it has overrides
    size_t n = nkeys(argv);
    size_t zones = std::stoul(argv.at(3 + n + 2));
    size_t a = 3 + n + 3 + 4 * zones;
    std::string suffix = RRL_OVERRIDES_SUFFIX;
    for (size_t i = 0; i < requests.size(); i++) {
        bool p = pass(i, requests[i]);
        // a settlement's reply: 4 integers a limit whatever its zone
        bool settle = is_settle_entry(argv.at(a));
        items.push_back(integer(p ? 1 : 0));
        items.push_back(integer(kNow));
        for (size_t j = 0; j < requests[i].size(); j++) {
            size_t zone = std::stoul(argv.at(a + 1 + 2 * j));
            const std::string& algorithm = argv.at(3 + n + 3 + 4 * (zone - 1));
            items.push_back(integer(p ? 1 : 0));
            items.push_back(integer(p ? kRemaining : 0));
            items.push_back(integer(1000000));
            items.push_back(integer(p ? 0 : 500000));
            if (!settle && algorithm.size() > suffix.size() &&
                algorithm.compare(algorithm.size() - suffix.size(),
                                  suffix.size(), suffix) == 0) {
                // a rate override: kind, limit, period, burst
                for (long long v : {RRL_OVERRIDE_RATE, 7, 2000, 0}) {
                    items.push_back(integer(v));
                }
            }
        }
        a += 1 + 2 * requests[i].size();
    }
    return array(items);
}

std::string pass_reply(const Argv& argv) {
    return batch_reply(argv, [](size_t, const Argv&) { return true; });
}

std::string reject_reply(const Argv& argv) {
    return batch_reply(argv, [](size_t, const Argv&) { return false; });
}

std::string redis_reply(const Argv& argv) {
    std::string cmd = argv.empty() ? "" : argv[0];
    if (cmd == "AUTH" || cmd == "SELECT" || cmd == "CLIENT" ||
        cmd == "ASKING") {
        return "+OK\r\n";
    }
    if (cmd == "SCRIPT" && argv.size() == 3 && argv[1] == "LOAD") {
        return bulk(rrl_script_sha1());
    }
    if (is_batch(argv)) return pass_reply(argv);
    if (is_release(argv)) return integer(1);
    return "-ERR unknown command '" + cmd + "'\r\n";
}

std::string cluster_slots(const std::vector<Range>& ranges) {
    std::vector<std::string> items;
    for (const Range& r : ranges) {
        items.push_back(array({integer(r.start), integer(r.end),
                               array({bulk("127.0.0.1"), integer(r.port),
                                      bulk("id" + std::to_string(r.port))})}));
    }
    return array(items);
}

std::string sentinel_primary(unsigned port) {
    return array({bulk("127.0.0.1"), bulk(std::to_string(port))});
}

// the engine

EngineConf::EngineConf(int mode, const std::vector<const FakeRedis*>& servers) {
    for (const FakeRedis* s : servers) addrs.push_back(s->addr());
    server = servers.at(0)->name();
    conf.mode = mode;
    conf.db = 0;
    conf.timeout_ms = 200;
    conf.connect_timeout_ms = 200;
    conf.max_failures = 3;
    conf.cooldown_ms = 1000;
    conf.max_parked = 100;
    conf.sha = rrl_script_sha1();
    conf.sha_len = std::strlen(conf.sha);
}

const rrl_engine_conf_t* EngineConf::get() {
    conf.addrs = addrs.data();
    conf.naddrs = addrs.size();
    conf.server = server.data();
    conf.server_len = server.size();
    conf.sentinel_name = sentinel_name.data();
    conf.sentinel_name_len = sentinel_name.size();
    conf.username = username.data();
    conf.username_len = username.size();
    conf.password = password.data();
    conf.password_len = password.size();
    conf.sentinel_password = sentinel_password.data();
    conf.sentinel_password_len = sentinel_password.size();
    return &conf;
}

Engine make_engine(EngineConf& conf, TestLoop& loop) {
    return Engine(rrl_engine_new(conf.get(), loop.loop()), rrl_engine_free);
}

// a request's call

namespace {

int zone_ids[16];

void call_done(void* request, void* data) {
    auto* c = static_cast<TestCall*>(request);
    if (data == c) c->done++;
    c->call = nullptr;
}

}  // namespace

TestCall::TestCall(const std::vector<std::string>& keys_,
                   const std::vector<bool>& overrides)
    : keys(keys_),
      memory(rrl_request_size(std::max<size_t>(keys_.size(), 8)) / 8 + 1),
      request(
          rrl_request_make(memory.data(), std::max<size_t>(keys_.size(), 8))),
      result(*rrl_request_reply(request)),
      values(result.values) {
    for (size_t j = 0; j < keys.size(); j++) {
        bool o = j < overrides.size() && overrides[j];
        rrl_call_limit_t l{};
        l.zone = "z";
        l.zone_len = 1;
        l.algorithm = RRL_SLIDING_WINDOW;
        l.limit = 10;
        l.period_ms = 1000;
        l.cost = 1;
        l.key = reinterpret_cast<const unsigned char*>(keys[j].data());
        l.key_len = keys[j].size();
        l.redis_key = keys[j].data();
        l.redis_key_len = keys[j].size();
        l.overrides = o;
        limits.push_back(l);
        zones.push_back(&zone_ids[(j + (o ? 8 : 0)) % 16]);
    }
}

TestCall::~TestCall() {
    if (call) rrl_engine_detach(call);
}

bool TestCall::start(rrl_engine_t* engine) {
    // the test's limits as they are now, made anew in the same memory
    request = rrl_request_make(memory.data(), std::max<size_t>(keys.size(), 8));
    // each Redis key is keys[j]
    std::string scratch(rrl_key_max_len(1), '\0');
    for (size_t j = 0; j < limits.size(); j++) {
        const rrl_call_limit_t& l = limits[j];
        rrl_request_add(request, zones[j], &l, l.cost, nullptr, 0, l.key,
                        l.key_len, l.delay, scratch.data());
        *rrl_request_limit(request, j) = l;
    }
    result.capacity = 64;
    std::string sha = rrl_script_sha1();
    call = rrl_engine_call(engine, sha.data(), sha.size(), request, call_done,
                           this, this);
    return call != nullptr;
}

void TestCall::detach() {
    rrl_engine_detach(call);
    call = nullptr;
}

bool TestCall::passed() const {
    return done && result.rc == RRL_OK && result.nvalues > 0 && values[0] == 1;
}

std::string TestCall::error() const {
    return std::string(result.error, result.error_len);
}

std::string TestCall::node() const {
    return result.node ? std::string(result.node, result.node_len) : "";
}

}  // namespace rrl_test
