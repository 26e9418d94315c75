// The engine's calls: a request's script call, routed to a node (the
// server, the primary a Sentinel names, or in a Cluster the primary of the
// keys' slot, one part a slot), under one timeout; it outlives its request
// if the client goes away. The parts go to Redis in batches
// (engine_batches.cpp), that tell of them through answered() and out().
#include "engine/engine.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/guard.hpp"
#include "base/log.hpp"
#include "metrics/metrics_count.hpp"
#include "base/rrl_conf_types.h"

namespace rrl::engine {

namespace {

std::string vformat(const char* fmt, va_list args) {
    char buf[1024];
    int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
    return std::string(buf, n < 0 ? 0 : std::min<size_t>(n, sizeof(buf) - 1));
}

Node* part_node(const Call& parts, size_t i) {
    return static_cast<Node*>(parts.node(i));
}

}  // namespace

#define RRL_LOG_WITH(level)               \
    va_list args;                         \
    va_start(args, fmt);                  \
    std::string msg = vformat(fmt, args); \
    va_end(args);                         \
    rrl::log(level, msg)

void failure(const char* fmt, ...) {
    RRL_LOG_WITH(LogLevel::failure);
}
void info(const char* fmt, ...) {
    RRL_LOG_WITH(LogLevel::info);
}
void warn(const char* fmt, ...) {
    RRL_LOG_WITH(LogLevel::warn);
}

Event::Event(const rrl_loop_t& loop, void (*handler)(void*), void* arg,
             bool cancelable)
    : loop_(loop), handler_(handler), arg_(arg) {
    loop_.event_init(mem_, run, this, cancelable);
}

void Event::run(void* event) {
    auto* ev = static_cast<Event*>(event);
    guarded("an event", 0, [ev] {
        ev->handler_(ev->arg_);
        return 0;
    });
}

Event::~Event() {
    loop_.timer_del(mem_);
    loop_.unpost(mem_);
}

Value convert(const redisReply* reply, ValueStore& store) {
    Value v{};
    // hiredis zeroes what a type does not use
    v.type =
        (reply->type >= REDIS_REPLY_STRING && reply->type <= REDIS_REPLY_ERROR)
            ? reply->type
            : kValueNil;
    v.integer = reply->integer;
    v.str = reply->str;
    v.len = reply->len;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0) {
        store.emplace_back();
        auto& elements = store.back();
        elements.reserve(reply->elements);
        for (size_t i = 0; i < reply->elements; i++) {
            elements.push_back(convert(reply->element[i], store));
        }
        v.elements = elements.data();
        v.nelements = elements.size();
    }
    return v;
}

Engine::Engine(const rrl_engine_conf_t& conf, const rrl_loop_t& l)
    : loop(l),
      mode(conf.mode),
      server(conf.server, conf.server_len),
      sentinel_name(conf.sentinel_name ? conf.sentinel_name : "",
                    conf.sentinel_name_len),
      sha(conf.sha, conf.sha_len),
      timeout_ms(conf.timeout_ms),
      connect_timeout_ms(conf.connect_timeout_ms),
      max_failures(conf.max_failures),
      cooldown_ms(conf.cooldown_ms),
      max_parked(conf.max_parked),
      nodes(*this),
      batches(*this),
      username_(conf.username ? conf.username : "", conf.username_len),
      password_(conf.password ? conf.password : "", conf.password_len),
      sentinel_password_(conf.sentinel_password ? conf.sentinel_password : "",
                         conf.sentinel_password_len) {
    // the addresses' strings are kept here: the conf may go with a reload
    addr_strings_.reserve(3 * conf.naddrs);
    for (size_t i = 0; i < conf.naddrs; i++) {
        const rrl_engine_addr_t& a = conf.addrs[i];
        addr_strings_.emplace_back(a.host ? a.host : "");
        addr_strings_.emplace_back(a.unix_path ? a.unix_path : "");
        addr_strings_.emplace_back(a.name ? a.name : "");
    }
    for (size_t i = 0; i < conf.naddrs; i++) {
        const std::string* s = &addr_strings_[3 * i];
        addrs.push_back({s[0].c_str(), conf.addrs[i].port,
                         conf.addrs[i].unix_path ? s[1].c_str() : nullptr,
                         s[2].c_str()});
    }
    tls_ = conf.tls ? &conf.tls->tls : nullptr;
    sentinel_tls_ = conf.sentinel_tls ? &conf.sentinel_tls->tls : nullptr;
    if (conf.tls_server_name) {
        tls_server_name_.assign(conf.tls_server_name, conf.tls_server_name_len);
    }

    handshake_init(&setup[0], false, username_, password_, conf.db);
    handshake_init(&setup[1], true, {}, sentinel_password_, 0);

    if (mode == RRL_SERVER_CLUSTER || mode == RRL_SERVER_SENTINEL) {
        topology = new Topology(*this);
        topology->want();
        return;
    }

    const rrl_engine_addr_t& a = addrs.at(0);
    primary_ = nodes.get(Role::data, a.host, a.port, a.unix_path, &a);
    if (primary_ == nullptr) throw std::runtime_error("no node");
    primary_->use(true);
}

Engine::~Engine() {
    for (rrl_engine_call_t* call : spare_calls_) delete call;
    exiting = true;
    if (topology) topology->stop();
    nodes.exit();
    delete topology;
}

std::string Engine::tls_name(const rrl_engine_addr_t* addr,
                             const char* host) const {
    if (!tls_server_name_.empty()) return tls_server_name_;
    if (addr == nullptr && mode == RRL_SERVER_CLUSTER) addr = &addrs.at(0);
    if (addr == nullptr || addr->unix_path) return host ? host : "";
    // the host of "host:port", "[v6]:port" or "host", as written
    std::string_view name = addr->name;
    if (!name.empty() && name[0] == '[') {
        return std::string(name.substr(1, name.find(']') - 1));
    }
    size_t colon = name.find(':');
    if (colon != std::string_view::npos && name.rfind(':') == colon) {
        name = name.substr(0, colon);
    }
    return std::string(name);
}

// this worker's gauges: parked requests, and its nodes of limits in use
void Engine::gauges(rrl_metrics_t* m) const {
    m->parked = parked_;
    for (const Node& node : nodes.all()) {
        if (node.role == Role::data && node.reconnect) {
            metrics_gauge_node(m, node.ac && node.connected,
                               node.breaker.state);
        }
    }
}

// a node's connection is lost, or could not be made
void Engine::lost(Node* node) {
    if (exiting || node->role != Role::data || !node->reconnect) return;
    // a primary gone may have been replaced: ask who serves now
    if (mode == RRL_SERVER_CLUSTER) {
        ask(RetryAsk::cluster);
    } else if (topology && node == topology->primary()) {
        ask(RetryAsk::sentinel);
    }
}

rrl_engine_call_t* Engine::call(std::string_view sha, std::string_view form,
                                const CallLimit* limits,
                                const void* const* zones, size_t n,
                                rrl_engine_result_t* result,
                                rrl_engine_done_pt done, void* request,
                                void* data) {
    if (parked_ >= max_parked) {
        // a stalled Redis must not pile up requests without bound
        failure("%llu requests already wait for %s",
                (unsigned long long)parked_, server.c_str());
        loop.error(RRL_METRICS_ERR_MAX_PARKED);
        return nullptr;
    }

    // no limit, no memory: logged, no call; the call and its plan in one
    // allocation
    auto* call = guarded("call", (rrl_engine_call_t*)nullptr, [&] {
        rrl_engine_call_t* made = new_call();
        try {
            made->parts.emplace(sha, form, limits, zones, n,
                                mode == RRL_SERVER_CLUSTER);
        } catch (...) {
            free_call(made);
            throw;
        }
        return made;
    });
    if (call == nullptr) return nullptr;
    Call& c = *call->parts;
    size_t nparts = c.parts();

    // every part must have somewhere to go, or none is sent
    bool asking = topology && topology->asking();
    for (size_t i = 0; i < nparts; i++) {
        Node* node = route(c.slot(i));
        if (node == nullptr || node->ac == nullptr) {
            // no map or primary yet, its question out: the answer, or why
            // none comes, is what the second's one failure line says
            if (node || !asking) {
                failure("no connection to %s",
                        node ? node->name.c_str() : server.c_str());
            }
            loop.error(RRL_METRICS_ERR_CONNECTION);
            free_call(call);
            return nullptr;
        }
        c.set_node(i, node);
    }

    for (size_t i = 0; i < nparts; i++) {
        if (!c.asks(i)) continue;
        switch (part_node(c, i)->allows()) {
            case BreakerVerdict::call:
                break;
            case BreakerVerdict::probe:
                c.set_probe(i);
                break;
            case BreakerVerdict::refuse:
                while (i--) {
                    // the probes granted to the call: not made
                    if (c.probe(i)) part_node(c, i)->abandon();
                }
                loop.error(RRL_METRICS_ERR_CIRCUIT_OPEN);
                free_call(call);
                return nullptr;
        }
    }

    call->request = request;
    call->data = data;
    call->done = done;
    call->result = result;
    result->node = nullptr;
    result->error_len = 0;

    for (size_t i = 0; i < nparts; i++) {
        if (!batches.add(call, i)) {
            answered(call, i, "no memory", sizeof("no memory") - 1);
        }
    }

    parked_++;
    // not cancelable: a graceful shutdown waits for parked requests
    call->timer.add(timeout_ms);
    return call;
}

Node* Engine::route(unsigned slot) {
    switch (mode) {
        case RRL_SERVER_CLUSTER:
            return topology->slot_node(slot);
        case RRL_SERVER_SENTINEL:
            return topology->primary();
        default:
            return primary_;
    }
}

// MOVED: the slot has a new primary for good; the map is refreshed, and the
// batch goes there now. ASK: the keys are being migrated; this batch alone
// goes to the target (the batches send ASKING).
Node* Engine::redirect(Node* from, int kind, unsigned slot, const char* host,
                       unsigned port) {
    if (mode != RRL_SERVER_CLUSTER) return nullptr;
    if (!numeric(host)) {
        // a name (cluster-preferred-endpoint-type hostname): a worker never
        // resolves; the batch fails, and its answer refreshes the map
        failure(
            "%s from %s names \"%s\", not a numeric "
            "address",
            kind == RRL_REPLY_MOVED ? "MOVED" : "ASK", from->name.c_str(),
            host);
        return nullptr;
    }
    Node* node = nodes.get(Role::data, host, port, nullptr);
    if (node == nullptr) return nullptr;
    if (kind == RRL_REPLY_MOVED) {
        topology->moved(slot, node);
    } else if (node->ac == nullptr) {
        // a node not (yet) in the map: it is connected for this call
        node->used = true;
        node->connect();
    }
    return node->ac ? node : nullptr;
}

// a node lost, or an error reply: who serves now is asked
void Engine::ask(RetryAsk who) {
    if ((who == RetryAsk::sentinel && mode == RRL_SERVER_SENTINEL) ||
        (who == RetryAsk::cluster && mode == RRL_SERVER_CLUSTER)) {
        topology->want();
    }
}

// a part's reply is in, or it failed (error): the call finishes on its last
void Engine::answered(rrl_engine_call_t* call, size_t part, const char* error,
                      size_t len) {
    rrl_engine_result_t* result = call->result;
    if (error && result->node == nullptr) {
        // the first failure tells
        const std::string& name = part_node(*call->parts, part)->name;
        result->error_len = std::min(len, sizeof(result->error));
        std::memcpy(result->error, error, result->error_len);
        result->node = name.c_str();
        result->node_len = name.size();
    }
    if (call->parts->answer(part) == 0) {
        // resume the request from the event loop, not from inside hiredis
        call->finish.post();
    }
}

// A part nobody waits for left its batch: its request went away (and its
// arguments with it) or timed out; the call of a request gone is freed with
// its last part.
void Engine::out(rrl_engine_call_t* call) {
    if (call->request == nullptr && !call->held &&
        call->parts->in_batches() == 0) {
        free_call(call);
    }
}

void Engine::on_timeout(void* arg) {
    auto* call = static_cast<rrl_engine_call_t*>(arg);
    call->engine.timed_out(call);
}

void Engine::timed_out(rrl_engine_call_t* call) {
    if (call->request == nullptr) {
        probe_timed_out(call);
        return;
    }
    if (call->parts->pending() == 0) {
        // every part was answered in this turn, before the timers ran: the
        // finish posted then decides, and no timeout is counted
        return;
    }
    rrl_engine_result_t* result = call->result;
    // every part answered: a stuck connection dropped cannot touch it
    size_t i = call->parts->time_out();
    if (result->node == nullptr) {
        const std::string& name = part_node(*call->parts, i)->name;
        int n = std::snprintf(result->error, sizeof(result->error),
                              "timed out after %llu ms",
                              (unsigned long long)timeout_ms);
        result->error_len = std::min<size_t>(n, sizeof(result->error) - 1);
        result->node = name.c_str();
        result->node_len = name.size();
    }
    // a failure for each node waited on, once
    failures(call, &Call::fails);
    loop.error(RRL_METRICS_ERR_TIMEOUT);
    finish(call);
}

// A call detached with a probe in Redis, unanswered for a whole timeout: a
// failure of the probe's node. The call is held meanwhile: a stuck
// connection the breaker drops fails its batches at once, and the last of
// the call's parts coming out of them would free it.
void Engine::probe_timed_out(rrl_engine_call_t* call) {
    call->held = true;
    failures(call, &Call::probe_lost);
    call->held = false;
    if (call->parts->in_batches() == 0) free_call(call);
}

// a failure of the node of each part that fails() says is one, once
void Engine::failures(rrl_engine_call_t* call,
                      bool (Call::*fails)(size_t part)) {
    Call& parts = *call->parts;
    for (size_t i = 0; i < parts.parts(); i++) {
        if ((parts.*fails)(i)) part_node(parts, i)->outcome(false);
    }
}

void Engine::on_finish(void* arg) {
    auto* call = static_cast<rrl_engine_call_t*>(arg);
    call->engine.finish(call);
}

// The parts' replies merged into the script's reply to the request, each
// limit in its order; the parts that passed are given back when another
// rejected or failed.
void Engine::finish(rrl_engine_call_t* call) {
    rrl_engine_result_t* result = call->result;
    void* request = call->request;
    void* data = call->data;
    rrl_engine_done_pt done = call->done;

    result->nvalues = guarded("call", size_t{0}, [&] {
        return call->parts->merge(result->values, result->capacity);
    });
    result->rc = result->nvalues ? RRL_OK : RRL_ERROR;
    release(call);
    detach(call);
    done(request, data);
}

// Reserve-then-release: the request does not pass as a whole, so each part
// that passed is sent the script's release form, which gives back what its
// reservation took. Not awaited: a release lost leaves the reservation
// counted (the strict side).
void Engine::release(rrl_engine_call_t* call) {
    const Call& parts = *call->parts;
    for (size_t i = 0; i < parts.parts(); i++) {
        Node* node = part_node(parts, i);
        if (!parts.to_release(i) || node->ac == nullptr) continue;
        std::string form = guarded(
            "call", std::string(), [&] { return parts.release_command(i); });
        if (form.empty()) continue;
        (void)node->command(nullptr, nullptr, form.data(), form.size());
    }
}

void Engine::detach(rrl_engine_call_t* call) {
    call->finish.unpost();
    call->request = nullptr;
    call->result = nullptr;
    call->parts->detach();
    parked_--;

    if (call->parts->in_batches() == 0) {
        free_call(call);
        return;
    }
    // The request went away with parts in Redis. Should one carry its
    // node's probe, the timer stays: a Redis that never answers on that
    // connection still ends the probe, as a failure. Nothing else waits.
    if (call->parts->probe_out() && call->timer.set()) {
        // and a graceful shutdown need not wait for the call
        call->timer.cancelable(true);
        return;
    }
    call->timer.del();
}

rrl_engine_call_t* Engine::new_call() {
    if (spare_calls_.empty()) return new rrl_engine_call_t(*this);
    rrl_engine_call_t* call = spare_calls_.back();
    spare_calls_.pop_back();
    return call;
}

// as new: no timer, nothing posted, no plan
void Engine::free_call(rrl_engine_call_t* call) {
    if (spare_calls_.size() >= kSpareCalls || exiting) {
        delete call;
        return;
    }
    call->timer.del();
    call->finish.unpost();
    call->timer.cancelable(false);
    call->parts.reset();
    call->request = nullptr;
    call->data = nullptr;
    call->done = nullptr;
    call->result = nullptr;
    call->held = false;
    try {
        spare_calls_.push_back(call);
    } catch (...) {
        delete call;
    }
}

}  // namespace rrl::engine

rrl_engine_call_s::rrl_engine_call_s(rrl::engine::Engine& e)
    : engine(e),
      timer(e.loop, rrl::engine::Engine::on_timeout, this, false),
      finish(e.loop, rrl::engine::Engine::on_finish, this, false) {}

rrl_engine_call_s::~rrl_engine_call_s() = default;
