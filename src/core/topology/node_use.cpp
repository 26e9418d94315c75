#include "topology/node_use.hpp"

namespace rrl {

bool node_free(const NodeUse& u) {
    // a sentinel is kept; a primary is in use (reconnect) or mapped
    return u.data && !u.context && !u.timer && !u.reconnect && !u.mapped &&
           u.in_flight == 0 && u.batches == 0;
}

bool node_idle(const NodeUse& u) {
    // a node never used was never connected for a call: nothing to close
    return !u.reconnect && u.used && u.in_flight == 0 && u.context &&
           !u.dropping && !u.exiting;
}

bool node_stuck(const NodeUse& u, bool open, uint64_t since_read_ms,
                uint64_t timeout_ms) {
    return open && u.context && !u.dropping && u.in_flight > 0 &&
           since_read_ms >= timeout_ms;
}

int node_closed(const NodeUse& u) {
    // closed on purpose, once idle: nothing to say, nothing to retry
    if (u.exiting || (u.dropping && !u.reconnect)) return 0;
    int what = kNodeLost;
    // a retry already waiting is not doubled
    if (u.reconnect && !u.quitting && !u.timer) what |= kNodeRetry;
    return what;
}

}  // namespace rrl
