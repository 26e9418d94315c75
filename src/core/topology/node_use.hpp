// A node's use: a node is one connection to one address, never freed
// while the worker runs (hiredis may call back into it until its context
// is gone). So a node out of use only has its context closed, once idle;
// a new address takes over a node that nothing uses or points to; and a
// stuck connection (replies owed, nothing read for a whole timeout) is
// dropped when its circuit opens.
#pragma once

#include <cstdint>

namespace rrl {

// what the rules need to know of a node (and of its worker)
struct NodeUse {
    bool data = false;            // a Redis of limits, not a sentinel
    bool context = false;         // a hiredis context is open
    bool timer = false;           // a connect or reconnect timer is set
    bool reconnect = false;       // in use: reconnected if lost
    bool used = false;            // ever routed to
    bool mapped = false;          // named by the slot map or the sentinels
    bool dropping = false;        // its context is being freed on purpose
    bool exiting = false;         // the worker closes its nodes for good
    bool quitting = false;        // nginx is shutting down: nothing reconnects
    std::uint64_t in_flight = 0;  // calls hiredis holds
    std::uint64_t batches = 0;    // open batches for it
};

// nothing uses or points to the node: a new address may take it over
bool node_free(const NodeUse& u);

// the node is out of use and no call waits on it: close it now
bool node_idle(const NodeUse& u);

// the circuit opened (open) on a connection that owes replies and read
// nothing for a whole timeout (since_read_ms >= timeout_ms): it is stuck,
// drop it
bool node_stuck(const NodeUse& u, bool open, std::uint64_t since_read_ms,
                std::uint64_t timeout_ms);

// what follows the loss of a node's context (u as it was before it)
constexpr int kNodeLost = 1;   // not closed on purpose: log it, tell the engine
constexpr int kNodeRetry = 2;  // reconnect after the backoff

// kNodeLost and kNodeRetry, or'ed; 0: closed on purpose.
int node_closed(const NodeUse& u);

}  // namespace rrl
