// A worker's Redis engine: its nodes (hiredis contexts on the loop the shim
// lends it), the batches of script calls, the topology of Cluster and
// Sentinel modes, and the calls of requests. It knows no request type: a
// call reports to its caller's done(). The rules it applies are the core's
// units (call, batch, retry, breaker, backoff, handshake, node_use,
// refresher, slot_map, primary, topology_answer); here they meet hiredis.
#pragma once

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/batch.hpp"
#include "engine/breaker.hpp"
#include "engine/call_plan.hpp"
#include "engine/handshake.hpp"
#include "topology/node_use.hpp"
#include "engine/open_batches.hpp"
#include "topology/primary.hpp"
#include "topology/refresher.hpp"
#include "engine/owed_replies.hpp"
#include "engine/retry.hpp"
#include "base/rrl_engine_types.h"
#include "topology/slot_map.hpp"
#include "conf/tls.hpp"
#include "topology/topology_replies.hpp"

namespace rrl::engine {

class Engine;

// An event of the shim's loop (an ngx_event_t) in the engine's memory: it
// must not move once set up, as the loop points to it.
class Event {
   public:
    static constexpr size_t kRoom = 192;

    Event(const rrl_loop_t& loop, void (*handler)(void*), void* arg,
          bool cancelable);
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // the loop runs handler(arg) here: no exception goes back to it
    static void run(void* event);

    void add(uint64_t ms) { loop_.timer_add(mem_, ms); }
    void del() { loop_.timer_del(mem_); }
    bool set() const { return loop_.timer_set(mem_) != 0; }
    void post() { loop_.post(mem_); }
    void unpost() { loop_.unpost(mem_); }
    void cancelable(bool on) { loop_.set_cancelable(mem_, on); }

   private:
    const rrl_loop_t& loop_;
    void (*handler_)(void*);
    void* arg_;
    alignas(16) unsigned char mem_[kRoom];
};

enum class Role { data = 0, sentinel = 1 };

// One hiredis connection to one address, set up by the handshake plan,
// reconnected with backoff while in use, with its own circuit breaker.
// Nodes are never freed while the worker runs: one out of use may serve
// another address (Nodes::get()).
class Node {
   public:
    explicit Node(Engine& engine);

    void reset(Role role, const std::string& host, unsigned port,
               const std::string& unix_path, const std::string& tls_name);
    void use(bool on);
    void idle();  // closed once out of use and no call waits on it
    void connect();
    void drop();  // frees the context: its calls fail, then closed()

    // the circuit breaker
    BreakerVerdict allows();
    void outcome(bool ok);
    void abandon();

    // commands, each owed a reply: false when not sent
    bool command(redisCallbackFn* fn, void* privdata, const char* cmd,
                 size_t len);
    bool command_argv(redisCallbackFn* fn, void* privdata, int argc,
                      const char** argv, const size_t* argvlen);

    // a reply was read: a TLS connection's handshake is over
    void replied();
    NodeUse state() const;

    Engine& engine;
    Role role = Role::data;
    std::string host, unix_path, name;
    unsigned port = 0;

    redisAsyncContext* ac = nullptr;
    void* conn = nullptr;  // the shim's, for flush()
    Event connect_timer, reconnect_timer;
    uint64_t backoff = 0;  // ms; 0: the last connection worked
    Breaker breaker;
    ReplyCount count;
    uint64_t in_flight = 0;  // calls hiredis holds
    uint64_t batches = 0;    // open batches for it
    uint64_t last_read = 0;  // the loop's ms

    bool connected = false;
    bool dropping = false;   // its context is being freed on purpose
    bool reconnect = false;  // in use: reconnect if lost
    bool used = false;       // ever routed to
    bool mapped = false;     // a primary the slot map or the sentinels name

    // TLS: its SSL object (hiredis's), the name checked; the TCP connection
    // is up, then its handshake is over (at the first reply)
    SSL* ssl = nullptr;
    std::string tls_name;
    bool tcp_up = false;

   private:
    void setup(int step);
    bool start_tls(redisAsyncContext* c);
    void handshake_failed(const SSL* s, const char* why);
    void closed(const char* why);
    static void on_connect(const redisAsyncContext* ac, int status);
    static void on_setup(redisAsyncContext* ac, void* reply, void* privdata);
    static void on_closed(void* arg, const char* why);
    static void on_timer(void* arg);
    static void on_reconnect(void* arg);
};

// Every node of the worker, in the order they were made or taken over.
class Nodes {
   public:
    static constexpr size_t kMax = 1024;

    explicit Nodes(Engine& engine) : engine_(engine) {}

    // the node of an address (numeric), made or taken over; nullptr: none.
    // written: the configured address it is (its TLS name), if any
    Node* get(Role role, const char* host, unsigned port, const char* unix_path,
              const rrl_engine_addr_t* written = nullptr);
    void exit();  // no reconnect, every context freed

    std::list<Node>& all() { return nodes_; }
    const std::list<Node>& all() const { return nodes_; }

   private:
    Engine& engine_;
    std::list<Node> nodes_;
};

// The topology question (CLUSTER SLOTS, or a sentinel's
// get-master-addr-by-name): one out at a time, when the refresher says.
class Topology {
   public:
    explicit Topology(Engine& engine);
    ~Topology();

    void want();
    void stop();

    // Cluster: a slot's primary (nullptr: none known, a refresh is asked);
    // MOVED: the slot's primary is node now
    Node* slot_node(unsigned slot);
    void moved(unsigned slot, Node* node);
    // Sentinel: the primary named last
    Node* primary() const { return static_cast<Node*>(primary_.node()); }
    // the slot map's or the primary's question is out
    bool asking() const { return refresher_.asking; }

   private:
    Node* cluster_target();
    Node* sentinel_target();
    bool cluster_answer(Node* asked, const Value* value, std::string* why);
    bool sentinel_answer(Node* sentinel, const Value* value, std::string* why);

    static bool on_send(void* data, uint64_t generation);
    static void on_timer_set(void* data, uint64_t ms);
    static void on_timer(void* arg);
    static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);

    Engine& engine_;
    Event timer_;
    Refresher refresher_;
    Node* asked_ = nullptr;
    std::unique_ptr<SlotMap> map_;  // Cluster mode
    Primary primary_;               // Sentinel mode
    std::vector<const char*> argv_;
    std::vector<size_t> argvlen_;
};

// The batches of a turn: a call's part joins the open one of its node and
// slot; they are sent when the turn ends, or one at once when full.
class Batches {
   public:
    explicit Batches(Engine& engine);
    ~Batches();

    bool add(rrl_engine_call_t* call, size_t part);  // false: not sent

   private:
    void flush();
    void send(Batch* batch);
    bool resend(Batch* batch, Node* node);
    bool redirect(Batch* batch, const redisReply* rr, int kind);
    void answer(Batch* batch, const redisReply* rr);
    void fail(Batch* batch, const std::string& why);
    void parts(Batch* batch, const redisReply* rr, const char* error,
               size_t len);
    void unsent(Batch* batch, bool failed);
    bool part_out(rrl_engine_call_t* call, size_t part);
    void part_unsent(rrl_engine_call_t* call, size_t part);

    static void on_flush(void* arg);
    static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);

    Engine& engine_;
    OpenBatches open_;
    Event flush_;
};

}  // namespace rrl::engine

// A request's call: its parts (Call), one timeout, and the posted event
// that reports it; it outlives its request if the client goes away. It is
// the data of its parts' entries in batches.
struct rrl_engine_call_s {
    rrl_engine_call_s(rrl::engine::Engine& e);
    ~rrl_engine_call_s();

    rrl::engine::Engine& engine;
    void* request = nullptr;  // nullptr once detached
    void* data = nullptr;
    rrl_engine_done_pt done = nullptr;
    rrl_engine_result_t* result = nullptr;
    std::optional<rrl::Call> parts;  // set once made
    rrl::engine::Event timer, finish;
    bool held = false;  // not to be freed now
};

namespace rrl::engine {

class Engine {
   public:
    Engine(const rrl_engine_conf_t& conf, const rrl_loop_t& loop);
    ~Engine();

    // The script's call of limits in form (Call's constructor); nullptr:
    // not made now (no connection, the breaker open, too many parked,
    // logged and counted). done(request, data) runs once, from a posted
    // event, with result written.
    rrl_engine_call_t* call(std::string_view sha, std::string_view form,
                            const CallLimit* limits,
                            const void* const* zones, size_t n,
                            rrl_engine_result_t* result,
                            rrl_engine_done_pt done, void* request, void* data);
    void detach(rrl_engine_call_t* call);
    void gauges(rrl_metrics_t* m) const;

    // from below: the batches, the nodes
    void answered(rrl_engine_call_t* call, size_t part, const char* error,
                  size_t len);
    void out(rrl_engine_call_t* call);
    Node* redirect(Node* from, int kind, unsigned slot, const char* host,
                   unsigned port);
    void ask(RetryAsk who);
    void lost(Node* node);
    bool quitting() const { return exiting || loop.quitting(); }
    // the TLS context of role's connections, nullptr: plain TCP
    const Tls* tls(Role role) const {
        return role == Role::data ? tls_ : sentinel_tls_;
    }
    // the name a TLS connection to host checks: tls_server_name=, else the
    // host of the address as written (addr), else (a node the cluster or
    // the sentinels name) the first seed's in a cluster, or host itself
    std::string tls_name(const rrl_engine_addr_t* addr, const char* host) const;

    static void on_timeout(void* arg);  // a call's events
    static void on_finish(void* arg);

    rrl_loop_t loop;
    // the conf, its strings kept here
    int mode;
    std::vector<rrl_engine_addr_t> addrs;
    std::string server, sentinel_name, sha;
    uint64_t timeout_ms, connect_timeout_ms, max_failures, cooldown_ms,
        max_parked;
    Handshake setup[2];
    bool exiting = false;

    Nodes nodes;
    Batches batches;
    Topology* topology = nullptr;  // Cluster and Sentinel modes

   private:
    Node* route(unsigned slot);
    void timed_out(rrl_engine_call_t* call);
    void probe_timed_out(rrl_engine_call_t* call);
    void failures(rrl_engine_call_t* call, bool (Call::*fails)(size_t part));
    void finish(rrl_engine_call_t* call);
    void release(rrl_engine_call_t* call);
    // A call made, or one freed before (a call is over 1 KB, above
    // malloc's per-thread cache: a busy worker reuses its own).
    rrl_engine_call_t* new_call();
    void free_call(rrl_engine_call_t* call);

    std::vector<std::string> addr_strings_;
    std::string username_, password_, sentinel_password_;
    Node* primary_ = nullptr;  // one server
    const Tls* tls_ = nullptr;
    const Tls* sentinel_tls_ = nullptr;
    std::string tls_server_name_;
    uint64_t parked_ = 0;  // calls with a request
    // none under ASan: a call used after its free is caught there
#if defined(__SANITIZE_ADDRESS__)
    static constexpr size_t kSpareCalls = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    static constexpr size_t kSpareCalls = 0;
#else
    static constexpr size_t kSpareCalls = 256;
#endif
#else
    static constexpr size_t kSpareCalls = 256;
#endif
    std::vector<rrl_engine_call_t*> spare_calls_;
};

// a numeric address, that hiredis connects to without DNS
bool numeric(const char* host);

// logs at RRL_LOG_FAILURE: at most once a second a worker
void failure(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// a reply as the topology parsers read it, its arrays kept in store
using ValueStore = std::list<std::vector<Value>>;
Value convert(const redisReply* reply, ValueStore& store);

}  // namespace rrl::engine
