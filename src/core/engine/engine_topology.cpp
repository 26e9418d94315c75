// The topology of Cluster and Sentinel modes (a worker is in one of them).
// One question out at a time, sent when the refresher says, to the node the
// mode names; its timeout and answer go back to the refresher.
//
// Cluster: the slot map, read with CLUSTER SLOTS from a seed or a known
// primary, at start and whenever a MOVED, a CLUSTERDOWN or a lost primary
// says it changed; one node a primary. A refresh is never awaited by a
// request: until it is answered, calls go where the map (and MOVED) said.
//
// Sentinel: the primary is the address the sentinels give for the name of
// "sentinel=NAME", asked at start, every second, and at once whenever the
// primary is lost or answers as a replica (READONLY). The periodic question
// catches a planned failover, where the old primary stays writable for
// seconds after the switch. One sentinel at a time, the next on a failure.
#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "base/guard.hpp"
#include "engine/engine.hpp"
#include "base/rrl_conf_types.h"
#include "topology/topology_fault.hpp"

namespace rrl::engine {

namespace {

// asks at most this often: a burst of MOVED replies or losses asks once
constexpr uint64_t kAskMinMs = 100;
constexpr uint64_t kAskRetryMs = 500;
constexpr uint64_t kSentinelEveryMs = 1000;

}  // namespace

Topology::Topology(Engine& engine)
    : engine_(engine), timer_(engine.loop, on_timer, this, true) {
    RefresherConf conf;
    conf.min_ms = kAskMinMs;
    conf.retry_ms = kAskRetryMs;
    conf.timeout_ms = engine.connect_timeout_ms + engine.timeout_ms;
    conf.send = on_send;
    conf.timer = on_timer_set;
    conf.data = this;

    if (engine.mode == RRL_SERVER_CLUSTER) {
        // two failures in a row are retried quickly, then slower
        conf.quick = 2;
        argv_ = {"CLUSTER", "SLOTS"};
        map_ = std::make_unique<SlotMap>();
    } else {
        // each sentinel once quickly, then slower; the next after a failure
        conf.quick = engine.addrs.size();
        conf.poll_ms = kSentinelEveryMs;
        conf.rotate = true;
        argv_ = {"SENTINEL", "get-master-addr-by-name",
                 engine.sentinel_name.c_str()};
    }
    for (const char* arg : argv_) argvlen_.push_back(std::strlen(arg));
    refresher_ = Refresher(conf);
}

Topology::~Topology() = default;

void Topology::want() {
    if (engine_.loop.quitting()) return;
    refresher_.want(int64_t(engine_.loop.msec()));
}

void Topology::stop() {
    refresher_.stop();
}

// the primary of a slot; nullptr (and the map is refreshed): none known
Node* Topology::slot_node(unsigned slot) {
    auto* node = static_cast<Node*>(map_->node(slot));
    if (node == nullptr) want();
    return node;
}

// MOVED: the slot has a new primary for good; the map is refreshed
void Topology::moved(unsigned slot, Node* node) {
    map_->set(slot, node);
    node->use(true);
    want();
}

bool Topology::on_send(void* data, uint64_t generation) {
    auto* t = static_cast<Topology*>(data);
    Node* node = t->engine_.mode == RRL_SERVER_CLUSTER ? t->cluster_target()
                                                       : t->sentinel_target();
    if (node == nullptr ||
        !node->command_argv(on_reply, reinterpret_cast<void*>(generation),
                            int(t->argv_.size()), t->argv_.data(),
                            t->argvlen_.data())) {
        return false;
    }
    // a node asked is not closed as idle before it answers
    node->in_flight++;
    t->asked_ = node;
    return true;
}

void Topology::on_timer_set(void* data, uint64_t ms) {
    auto* t = static_cast<Topology*>(data);
    t->timer_.del();
    if (ms) t->timer_.add(ms);
}

void Topology::on_timer(void* arg) {
    auto* t = static_cast<Topology*>(arg);
    if (!t->refresher_.fired()) {
        // the delay before asking again is over, or the next poll is due
        t->want();
        return;
    }
    failure(
        "%s %s %s",
        t->engine_.mode == RRL_SERVER_CLUSTER ? "CLUSTER SLOTS on" : "sentinel",
        t->asked_->name.c_str(),
        t->engine_.mode == RRL_SERVER_CLUSTER ? "timed out"
                                              : "did not answer in time");
    t->refresher_.failed();
}

void Topology::on_reply(redisAsyncContext* ac, void* reply, void* privdata) {
    guarded("a reply", 0, [&] {
        auto* node = static_cast<Node*>(ac->data);
        auto* rr = static_cast<const redisReply*>(reply);
        Topology* t = node->engine.topology;

        node->in_flight--;
        if (t->refresher_.answer(reinterpret_cast<uintptr_t>(privdata))) {
            std::string why;
            ValueStore store;
            Value value{};
            if (rr) value = convert(rr, store);
            const Value* answer = rr ? &value : nullptr;
            bool cluster = t->engine_.mode == RRL_SERVER_CLUSTER;
            // an exception (no memory) is a failed answer, logged
            bool ok = guarded("a topology answer", false, [&] {
                return cluster ? t->cluster_answer(node, answer, &why)
                               : t->sentinel_answer(node, answer, &why);
            });
            if (!ok) {
                // else the answer's parser or the mode has logged it
                if (!why.empty()) {
                    failure("%s %s %s",
                            cluster ? "CLUSTER SLOTS on" : "sentinel",
                            node->name.c_str(), why.c_str());
                }
                t->refresher_.failed();
            } else if (t->refresher_.answered()) {
                t->want();
            }
        }
        // a seed out of the map is closed once it has answered
        node->idle();
        return 0;
    });
}

// a primary in use, the one after the last asked; else a seed
Node* Topology::cluster_target() {
    std::list<Node>& all = engine_.nodes.all();
    auto start = std::find_if(all.begin(), all.end(),
                              [this](Node& n) { return &n == asked_; });
    // round the nodes from the one after the last asked, to it
    auto it = start;
    for (size_t i = 0; i < all.size(); i++) {
        it = (it == all.end() || std::next(it) == all.end()) ? all.begin()
                                                             : std::next(it);
        if (it->mapped && it->connected) return &*it;
    }
    const rrl_engine_addr_t& a =
        engine_.addrs[refresher_.target(engine_.addrs.size(), true)];
    Node* node = engine_.nodes.get(Role::data, a.host, a.port, a.unix_path, &a);
    if (node) {
        // a seed out of the map is closed once it has answered
        node->used = true;
        node->connect();
    }
    return node;
}

// The new map from CLUSTER SLOTS: each slot's primary; primaries new to it
// are connected, nodes out of it are closed once idle.
bool Topology::cluster_answer(Node* asked, const Value* value,
                              std::string* why) {
    size_t max =
        value ? std::min<size_t>(value->nelements, RRL_CLUSTER_SLOTS) : 0;
    auto ranges = cluster_slots_answer(value, max, why);
    if (!ranges) return false;
    size_t n = ranges->size();
    std::vector<void*> primaries(n ? n : 1, nullptr);
    for (size_t i = 0; i < n; i++) {
        const SlotRange& range = (*ranges)[i];
        // "": the node asked (Redis does not know its own address)
        const char* host = !range.primary.host.empty()
                               ? range.primary.host.c_str()
                           : asked->host.empty() ? nullptr
                                                 : asked->host.c_str();
        if (host == nullptr || !numeric(host)) {
            failure(
                "CLUSTER SLOTS on %s names a primary by "
                "\"%s\", not by a numeric address: slots %u-%u are left "
                "out",
                asked->name.c_str(), host ? host : "", range.start, range.end);
            continue;
        }
        Node* node =
            engine_.nodes.get(Role::data, host, range.primary.port, nullptr);
        if (node == nullptr) return false;
        // no other address of this map takes its node over
        node->mapped = true;
        primaries[i] = node;
    }
    auto summary = map_->replace(*ranges, primaries.data());
    if (!summary) return false;
    for (Node& node : engine_.nodes.all()) {
        node.mapped = map_->serves(&node);
        // out of it: no more a primary (failed over, removed), or a seed
        node.use(node.mapped);
    }
    info(
        "cluster slot map from %s: %zu of %d slots on %zu "
        "primaries",
        asked->name.c_str(), summary->covered, RRL_CLUSTER_SLOTS,
        summary->primaries);
    return true;
}

// The sentinel of the turn; connected when needed, kept while it answers
// (a sentinel's node is never taken over by another address).
Node* Topology::sentinel_target() {
    const rrl_engine_addr_t& a =
        engine_.addrs[refresher_.target(engine_.addrs.size(), false)];
    Node* node =
        engine_.nodes.get(Role::sentinel, a.host, a.port, a.unix_path, &a);
    if (node) node->connect();
    return node;
}

bool Topology::sentinel_answer(Node* sentinel, const Value* value,
                               std::string* why) {
    const std::string& name = engine_.sentinel_name;
    auto primary = rrl::sentinel_answer(value, name, why);
    if (!primary) return false;
    const char* host = primary->host.c_str();
    if (!numeric(host)) {
        failure(
            "sentinel %s names the primary by \"%s\", "
            "not by a numeric address",
            sentinel->name.c_str(), host);
        return false;
    }
    Node* node = engine_.nodes.get(Role::data, host, primary->port, nullptr);
    if (node == nullptr) return false;

    void* previous;
    PrimaryChange change = primary_.name(node, &previous);
    auto* old = static_cast<Node*>(previous);
    if (change != PrimaryChange::same) {
        (old ? warn : info)("sentinel %s: the primary of \"%s\" is %s",
                            sentinel->name.c_str(), name.c_str(),
                            node->name.c_str());
    }
    // "mapped": no other address takes its node over
    node->mapped = true;
    node->use(true);
    if (old) {
        old->mapped = false;
        old->use(false);
    }
    return true;
}

}  // namespace rrl::engine
