// One EVALSHA of the script's batch form: the parts of calls (Call)
// for one node and slot made in one turn of the event loop. Redis runs the
// script once for all of them and decides each request alone. A batch holds
// at most kMaxParts requests or kMaxKeys keys (a script run stays short);
// its command is built once, kept to be sent again, and its reply is one
// array of each part's share in turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/small_vector.hpp"
#include "engine/call_plan.hpp"
#include "engine/retry.hpp"

namespace rrl {

class Batch {
   public:
    static constexpr std::size_t kMaxParts = 64;
    static constexpr std::size_t kMaxKeys = 256;

    // For the parts of one node (the caller's, opaque) and slot.
    Batch(void* node = nullptr, unsigned slot = 0) : node_(node), slot_(slot) {}

    void* node() const { return node_; }
    unsigned slot() const { return slot_; }
    // When it was sent, for metrics (the caller's clock).
    std::int64_t sent = 0;

    // Adds the part of call, tagged with data (the caller's), and enters
    // it; true: the batch is full, to be sent now. The call must live while
    // its part is in the batch.
    bool add(Call& call, std::size_t part, void* data);

    // Leaves out entry i, before the command is built.
    void remove(std::size_t i);

    std::size_t size() const { return entries_.size(); }
    void* data(std::size_t i) const { return entries_.at(i).data; }
    std::size_t part(std::size_t i) const { return entries_.at(i).part; }
    std::size_t keys() const { return keys_; }
    // The integers of the reply.
    std::size_t values() const { return values_; }
    // Where entry i's share of the reply starts.
    std::size_t share(std::size_t i) const;

    // [EVALSHA sha nkeys key.. "batch" "" nzones (zone's 4 arguments)..
    // (n (zone cost)..)..] in RESP, n "s<n>" for a settlement (its cost
    // "E:A:T"), and requests in a row of one shape as one, "*<r>" before
    // it (not settlements, nor lease zones' limits); built on the first
    // call, then kept.
    const std::string& command(std::string_view sha);

    // Its outcome for the breaker, once a batch: false when every part's
    // was seen already. Each part is counted.
    bool count();
    // Sent again, to node: see Call::resent().
    void resent(void* node);

    // What its reply of kind leads to (retry_action()): each retry once.
    RetryAction retry(int kind);

   private:
    struct Entry {
        Call* plan;
        std::size_t part;
        std::size_t limits;
        std::size_t values;
        void* data;
    };

    void* node_;
    unsigned slot_;
    bool reloaded_ = false;
    bool redirected_ = false;
    // a turn's few requests without an allocation of their own
    SmallVector<Entry, 16> entries_;
    std::size_t keys_ = 0;
    std::size_t values_ = 0;
    std::string command_;
};

}  // namespace rrl
