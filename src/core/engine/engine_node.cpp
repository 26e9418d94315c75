// A node: one hiredis async connection to one Redis (or Sentinel) address,
// set up by the handshake plan, reconnected with backoff while it is in
// use, with its own circuit breaker; its replies counted against the
// commands sent (hiredis 0.14 assert()s on a reply no command awaits) and
// built from the worker's reply objects (reply_objects.hpp). And the
// registry of a worker's nodes.
#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "engine/backoff.hpp"
#include "base/guard.hpp"
#include "engine/engine.hpp"
#include "engine/reply_objects.hpp"
#include "script/key.hpp"

#ifdef RRL_HAVE_TLS
#include <hiredis/hiredis_ssl.h>
#endif

namespace rrl::engine {

namespace {

// The worker's reply objects (reply_objects.hpp), wrapped to count replies
// before one is built
bool solicited(const redisReadTask* task) {
    auto* node = static_cast<Node*>(task->privdata);
    node->last_read = node->engine.loop.msec();
    if (task->parent == nullptr) node->replied();
    return node->count.read(task->parent != nullptr);
}

void* create_string(const redisReadTask* task, char* str, size_t len) {
    return solicited(task) ? reply_objects.createString(task, str, len)
                           : nullptr;
}

#if HIREDIS_MAJOR >= 1
using array_size = size_t;
#else
using array_size = int;
#endif

void* create_array(const redisReadTask* task, array_size elements) {
    return solicited(task) ? reply_objects.createArray(task, elements)
                           : nullptr;
}

void* create_integer(const redisReadTask* task, long long value) {
    return solicited(task) ? reply_objects.createInteger(task, value) : nullptr;
}

void* create_nil(const redisReadTask* task) {
    return solicited(task) ? reply_objects.createNil(task) : nullptr;
}

#if HIREDIS_MAJOR >= 1
// hiredis 1.x also builds RESP3's doubles and booleans
void* create_double(const redisReadTask* task, double value, char* str,
                    size_t len) {
    return solicited(task) ? reply_objects.createDouble(task, value, str, len)
                           : nullptr;
}

void* create_bool(const redisReadTask* task, int value) {
    return solicited(task) ? reply_objects.createBool(task, value) : nullptr;
}

redisReplyObjectFunctions counted_replies = {
    create_string, create_array, create_integer, create_double,
    create_nil,    create_bool,  free_reply};
#else
redisReplyObjectFunctions counted_replies = {
    create_string, create_array, create_integer, create_nil, free_reply};
#endif

}  // namespace

bool numeric(const char* host) {
    unsigned char addr[16];
    return inet_pton(AF_INET, host, addr) == 1 ||
           inet_pton(AF_INET6, host, addr) == 1;
}

Node::Node(Engine& e)
    : engine(e),
      connect_timer(e.loop, on_timer, this, true),
      reconnect_timer(e.loop, on_reconnect, this, true) {}

void Node::reset(Role r, const std::string& h, unsigned p,
                 const std::string& path, const std::string& tls) {
    role = r;
    host = path.empty() ? h : "";
    port = path.empty() ? p : 0;
    unix_path = path;
    name = path.empty() ? h + ":" + std::to_string(p) : "unix:" + path;
    tls_name = tls;
    backoff = 0;
    in_flight = batches = 0;
    connected = dropping = reconnect = used = mapped = false;
    breaker =
        Breaker(engine.max_failures, static_cast<int64_t>(engine.cooldown_ms));
}

NodeUse Node::state() const {
    NodeUse u;
    u.data = role == Role::data;
    u.context = ac != nullptr;
    u.timer = connect_timer.set() || reconnect_timer.set();
    u.reconnect = reconnect;
    u.used = used;
    u.mapped = mapped;
    u.dropping = dropping;
    u.exiting = engine.exiting;
    u.quitting = engine.loop.quitting();
    u.in_flight = in_flight;
    u.batches = batches;
    return u;
}

void Node::use(bool on) {
    if (on) {
        reconnect = used = true;
        if (ac == nullptr && !reconnect_timer.set()) connect();
        return;
    }
    reconnect = false;
    reconnect_timer.del();
    idle();
}

// a node out of use closes once no call waits on it
void Node::idle() {
    if (node_idle(state())) {
        info("%s is no more in use, closing", name.c_str());
        drop();
    }
}

// inside a hiredis callback, the free is deferred to its end
void Node::drop() {
    dropping = true;
    redisAsyncFree(ac);
}

void Node::connect() {
    if (ac || engine.quitting()) return;
    reconnect_timer.del();

    // the address is numeric (resolved at configuration): no DNS here
    redisAsyncContext* c = unix_path.empty()
                               ? redisAsyncConnect(host.c_str(), port)
                               : redisAsyncConnectUnix(unix_path.c_str());
    if (c == nullptr || c->err) {
        failure("cannot connect to %s: %s", name.c_str(),
                c ? c->errstr : "out of memory");
        if (c) redisAsyncFree(c);
        closed(nullptr);
        return;
    }
    if (!start_tls(c)) {
        redisAsyncFree(c);
        closed(nullptr);
        return;
    }
    conn = engine.loop.attach(c, on_closed, this);
    if (conn == nullptr) {
        redisAsyncFree(c);
        closed(nullptr);
        return;
    }

    ac = c;
    ac->data = this;
    connected = dropping = tcp_up = false;
    // counting replies as they are parsed, one too many fails the
    // connection before hiredis would assert(); their objects recycled
    ac->c.reader->fn = &counted_replies;
    ac->c.reader->privdata = this;
    count.reset();
    last_read = engine.loop.msec();

    redisAsyncSetConnectCallback(ac, on_connect);

    // queued now, written as soon as the connection is up
    int steps[kHandshakeMax];
    size_t n = handshake_plan(engine.setup[int(role)], steps);
    for (size_t i = 0; i < n; i++) setup(steps[i]);

    connect_timer.add(engine.connect_timeout_ms);
}

// TLS, when the node's role has it: the handshake runs once the TCP
// connection is up, with the first command written; it counts against
// connect_timeout, and is over at the first reply
bool Node::start_tls(redisAsyncContext* c) {
    const Tls* tls = engine.tls(role);
    ssl = nullptr;
    if (tls == nullptr) return true;
#ifdef RRL_HAVE_TLS
    SSL* s = tls->connection(tls_name);
    if (s && redisInitiateSSL(&c->c, s) == REDIS_OK) {
        ssl = s;
        return true;
    }
    // on loopback, the handshake may fail at once
    if (s) handshake_failed(s, c->errstr);
    SSL_free(s);
#else
    (void)c;
#endif
    return false;
}

// logged with OpenSSL's reason on s (if any), else why; counted as
// tls_handshake
void Node::handshake_failed(const SSL* s, const char* why) {
    std::string reason = s ? Tls::why(s) : "";
    engine.loop.error(RRL_METRICS_ERR_TLS);
    failure("TLS handshake with %s failed: %s", name.c_str(),
            reason.empty() ? why : reason.c_str());
}

void Node::replied() {
    if (ssl == nullptr || connected) return;
    connect_timer.del();
    connected = true;
    info("connected to %s with TLS", name.c_str());
}

// a step of the handshake plan
void Node::setup(int step) {
    if (step == kHandshakeReady) {
        // a connection that works: a next failure backs off from the start
        backoff = 0;
        return;
    }
    std::string_view args[kHandshakeArgs];
    size_t argc = handshake_command(engine.setup[int(role)], step, args);
    const char* argv[kHandshakeArgs];
    size_t argvlen[kHandshakeArgs];
    for (size_t i = 0; i < argc; i++) {
        argv[i] = args[i].data();
        argvlen[i] = args[i].size();
    }
    if (argc) {
        (void)command_argv(on_setup, reinterpret_cast<void*>(intptr_t(step)),
                           int(argc), argv, argvlen);
    }
}

void Node::on_setup(redisAsyncContext* ac, void* reply, void* privdata) {
    guarded("a reply", 0, [&] {
        int step = int(reinterpret_cast<intptr_t>(privdata));
        auto* rr = static_cast<redisReply*>(reply);
        auto* node = static_cast<Node*>(ac->data);
        if (rr == nullptr || node == nullptr) return 0;

        if (rr->type == REDIS_REPLY_ERROR) {
            std::string text =
                printable(std::string_view(rr->str, rr->len), 256);
            failure("%s on %s failed: %s", handshake_name(step),
                    node->name.c_str(), text.c_str());
            return 0;
        }
        node->setup(handshake_next(node->engine.setup[int(node->role)], step));
        return 0;
    });
}

void Node::on_connect(const redisAsyncContext* ac, int status) {
    guarded("a connection", 0, [&] {
        auto* node = static_cast<Node*>(ac->data);
        // a failure: hiredis frees the context next, and closed() retries
        if (status != REDIS_OK || node == nullptr) return 0;

        node->tcp_up = true;
        node->setup(handshake_next(node->engine.setup[int(node->role)],
                                   kHandshakeConnected));
        if (node->ssl) return 0;  // connected once its handshake is over
        node->connect_timer.del();
        node->connected = true;
        info("connected to %s", node->name.c_str());
        return 0;
    });
}

void Node::on_closed(void* arg, const char* why) {
    guarded("a connection", 0, [&] {
        auto* node = static_cast<Node*>(arg);
        // ac->data stays: hiredis 1.x runs the pending callbacks (NULL
        // replies) after this hook, and the topology's finds its node there
        node->ac = nullptr;
        node->conn = nullptr;
        node->closed(node->count.unsolicited ? "a reply no command awaits"
                                             : why);
        return 0;
    });
}

// The context is gone (why: from the shim's cleanup hook) or was never
// made (nullptr, logged already): retry with backoff if still in use.
void Node::closed(const char* why) {
    bool late = !connect_timer.set() && why;
    connect_timer.del();
    int what = node_closed(state());

    if (ssl && tcp_up && !connected) {
        // up, but not its TLS: a handshake failed (or never ended)
        if (late) {
            handshake_failed(nullptr, "timed out");
        } else {
            handshake_failed(ssl, why);
        }
        why = nullptr;
    }
    ssl = nullptr;
    tcp_up = false;

    if (why && (what & kNodeLost)) {
        failure("connection to %s %s: %s", name.c_str(),
                connected ? "lost" : "failed", why);
    }
    connected = dropping = false;

    if (what & kNodeRetry) {
        // jitter: a fleet's workers do not reconnect in step
        reconnect_timer.add(backoff_next(&backoff, engine.loop.random()));
    }
    if (what & kNodeLost) engine.lost(this);
}

void Node::on_reconnect(void* arg) {
    auto* node = static_cast<Node*>(arg);
    if (node->reconnect) node->connect();
}

void Node::on_timer(void* arg) {
    auto* node = static_cast<Node*>(arg);
    // closed() tells of a handshake that never ended
    if (!node->tcp_up || !node->ssl) {
        failure("connecting to %s timed out", node->name.c_str());
    }
    // fails the queued calls; closed() schedules a retry
    if (node->ac) redisAsyncFree(node->ac);
}

bool Node::command(redisCallbackFn* fn, void* privdata, const char* cmd,
                   size_t len) {
    if (ac == nullptr ||
        redisAsyncFormattedCommand(ac, fn, privdata, cmd, len) != REDIS_OK) {
        return false;
    }
    count.command();
    return true;
}

bool Node::command_argv(redisCallbackFn* fn, void* privdata, int argc,
                        const char** argv, const size_t* argvlen) {
    if (ac == nullptr || redisAsyncCommandArgv(ac, fn, privdata, argc, argv,
                                               argvlen) != REDIS_OK) {
        return false;
    }
    count.command();
    return true;
}

// The circuit breaker: the core's state machine, on the monotonic clock in
// ms. Here: its log lines, and a stuck connection dropped when it opens.
BreakerVerdict Node::allows() {
    return breaker.allow(
        breaker.needs_clock() ? int64_t(engine.loop.clock() / 1000) : 0);
}

void Node::abandon() {
    breaker.abandon();
}

void Node::outcome(bool ok) {
    if (ok) {
        if (breaker.success() == BreakerChange::closed) {
            warn("%s answers again, circuit closed", name.c_str());
        }
        return;
    }
    if (breaker.failure(engine.loop.clock() / 1000) == BreakerChange::opened) {
        warn(
            "%llu failures in a row on %s, circuit open: "
            "the fail mode answers, a probe every %llu ms",
            (unsigned long long)breaker.failures, name.c_str(),
            (unsigned long long)engine.cooldown_ms);
    }
    if (node_stuck(state(), breaker.state == BreakerState::open,
                   engine.loop.msec() - last_read, engine.timeout_ms)) {
        // a blackholed server: start afresh, which also frees what hiredis
        // holds for the calls (their failures come back here while the
        // context is being freed)
        drop();
    }
}

// The node of an address, made on first use, or taking over a node out of
// use (node_free()): nodes are never freed while the worker runs, and
// it keeps at most kMax: a cluster or a Sentinel naming ever new addresses
// does not grow it without bound.
Node* Nodes::get(Role role, const char* host, unsigned port,
                 const char* unix_path, const rrl_engine_addr_t* written) {
    const char* addr = unix_path ? unix_path : host;
    if (std::strlen(addr) >= RRL_HOST_MAX || (!unix_path && !numeric(host))) {
        // hiredis would resolve a name, blocking the worker
        return nullptr;
    }
    std::string path = unix_path ? unix_path : "";

    auto unused = nodes_.end();
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
        if (it->role == role && it->unix_path == path &&
            (unix_path ? true : it->port == port && it->host == host)) {
            return &*it;
        }
        if (unused == nodes_.end() && node_free(it->state())) unused = it;
    }

    if (unused != nodes_.end()) {
        nodes_.splice(nodes_.end(), nodes_, unused);
    } else if (nodes_.size() >= kMax) {
        failure(
            "%zu addresses in use, none idle: %s:%u is "
            "not connected",
            nodes_.size(), addr, port);
        return nullptr;
    } else {
        nodes_.emplace_back(engine_);
    }
    Node& node = nodes_.back();
    // the name its TLS connections check, worked out only when they are
    node.reset(role, unix_path ? "" : host, port, path,
               engine_.tls(role) ? engine_.tls_name(written, host) : "");
    return &node;
}

void Nodes::exit() {
    for (Node& node : nodes_) {
        // no reconnect; not closed as idle while exiting: freed here
        node.use(false);
        // fails pending callbacks, then the cleanup hook: no retry
        if (node.ac) redisAsyncFree(node.ac);
    }
}

}  // namespace rrl::engine
