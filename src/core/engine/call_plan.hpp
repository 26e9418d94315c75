// A request's script call as parts: one in a single Redis (or behind
// Sentinel), one a Cluster slot of its keys, each with the limits of that
// slot in the request's order. The parts' replies are kept here and merged
// into the reply the script gives the whole request, so that decoding is
// the same in every mode. Where some part rejected or failed, the parts that
// passed have consumed: each is sent the script's release form
// (reserve-then-release), which gives back what its reservation took.
//
// Each part's way to Redis is kept here too, the node it goes to named by
// the caller (opaque): whether a batch carries it, whether it is answered
// (replied, failed or timed out), whether the node's circuit breaker saw
// its outcome, whether it carries the node's half-open probe. Every probe
// has an exit: sent and answered, abandoned when not sent, or a failure on
// a timeout, once a node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/small_vector.hpp"
#include "script/call_args.hpp"

namespace rrl {

class Call {
   public:
    // The script's call of limits (n, each with its zone's id, zones[j]: a
    // batch sends each zone's arguments once) in form ("": a check, each
    // limit's cost field a check's; kSettleForm, settle.hpp: a settlement,
    // cost fields settle_cost()'s, 4 integers a limit in its reply whatever
    // its zone, never released), sha the script's SHA-1. The keys and
    // arguments are copied: a call may outlive its request. Throws
    // std::invalid_argument for no limits or a SHA-1 too long.
    Call(std::string_view sha, std::string_view form, const CallLimit* limits,
         const void* const* zones, std::size_t n, bool cluster);

    std::size_t parts() const { return parts_.size(); }
    bool settlement() const { return settlement_; }
    unsigned slot(std::size_t part) const { return at(part).slot; }
    std::size_t limits(std::size_t part) const { return at(part).index.size(); }
    // The integers of the part's reply.
    std::size_t values(std::size_t part) const;

    // The part's limit j: its key, zone, the zone's arguments and its cost
    // argument.
    struct ZoneArgs {
        std::string_view algorithm;  // with its suffix (algorithm_arg())
        std::uint64_t limit;
        std::uint64_t period_ms;
        std::uint64_t burst;
    };
    std::string_view key(std::size_t part, std::size_t j) const;
    const void* zone(std::size_t part, std::size_t j) const;
    const ZoneArgs& zone_args(std::size_t part, std::size_t j) const;
    std::string_view cost(std::size_t part, std::size_t j) const;

    // Where the part's reply goes, values(part) integers: it is answered.
    std::int64_t* reply(std::size_t part);

    // The whole request's reply into out (room for cap integers): its
    // length, or 0 when some part has no reply.
    std::size_t merge(std::int64_t* out, std::size_t cap) const;

    // Whether the part passed while the request as a whole did not.
    bool to_release(std::size_t part) const;
    // [EVALSHA sha n key.. "release" at time (limit's arguments)..] in RESP,
    // "at" the part's reply's time.
    std::string release_command(std::size_t part) const;

    // Routing: part's node; whether it is the first part on its node (a
    // call asks each node's breaker once: its parts there ride on one
    // probe); the probe granted to it.
    void set_node(std::size_t part, void* node) { at(part).node = node; }
    void* node(std::size_t part) const { return at(part).node; }
    bool asks(std::size_t part) const;
    void set_probe(std::size_t part) { at(part).probe = true; }
    bool probe(std::size_t part) const { return at(part).probe; }

    // In a batch, or out of it: out() tells whether the part's reply is
    // still awaited (not answered, the call not detached).
    void enter(std::size_t part) { at(part).in_batch = true; }
    bool out(std::size_t part);
    bool awaited(std::size_t part) const;
    std::size_t in_batches() const;

    // Answered: how many parts are still awaited.
    std::size_t answer(std::size_t part);
    std::size_t pending() const;

    // Not sent: true when the part holds a probe the breaker never saw
    // (to abandon); it is counted now.
    bool unsent(std::size_t part);
    // Its outcome seen by the breaker: false when it was already.
    bool count(std::size_t part);
    // Sent again to node: counted anew, its probe ended by the first reply.
    void resent(std::size_t part, void* node);

    // The timeout: each part answered; the first not answered before, or
    // parts() if none. Then fails(part) for each: true for a part not yet
    // counted that asks its node (a failure for each node once).
    std::size_t time_out();
    bool fails(std::size_t part);

    // The request went away: the call's parts are not awaited any more.
    void detach() { detached_ = true; }
    bool detached() const { return detached_; }
    // A probe in a batch the breaker has not seen: the call keeps its timer
    // for it; probe_lost(part) counts it as a failure, once.
    bool probe_out() const;
    bool probe_lost(std::size_t part);

   private:
    struct Limit {
        SmallVector<char, 48> key;  // most keys without an allocation
        ZoneArgs zone_args;         // written out once a batch, in its RESP
        std::string cost;
        const void* zone;
        std::size_t width;  // of its reply: more with overrides, a lease
        std::string_view key_view() const { return {key.data(), key.size()}; }
    };
    struct Part {
        unsigned slot = 0;
        SmallVector<std::size_t, 4> index;  // the request's limit of each
        SmallVector<std::int64_t, 16> values;
        bool ok = false;  // values are set
        void* node = nullptr;
        bool in_batch = false;
        bool answered = false;
        bool counted = false;
        bool probe = false;
    };

    const Part& at(std::size_t part) const;
    Part& at(std::size_t part);
    const Limit& limit(std::size_t part, std::size_t j) const;
    // where limit i's reply starts in the whole request's
    std::size_t offset(std::size_t i) const;

    // the script's SHA-1 in hex, 40 bytes: no allocation of its own
    char sha_[64];
    std::size_t sha_len_ = 0;
    std::string time_;
    // a request's few limits and parts: no allocation of their own, and
    // the Call small enough for malloc's per-thread cache
    SmallVector<Limit, 2> limits_;
    SmallVector<Part, 1> parts_;
    bool detached_ = false;
    bool settlement_ = false;
};

}  // namespace rrl
