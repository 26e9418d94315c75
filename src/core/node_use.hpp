// A node's use: a node is one connection to one address, never freed
// while the worker runs (hiredis may call back into it until its context
// is gone). So a node out of use only has its context closed, once idle;
// a new address takes over a node that nothing uses or points to; and a
// stuck connection (replies owed, nothing read for a whole timeout) is
// dropped when its circuit opens.
#pragma once

#include "rrl_node_use.h"

namespace rrl {

bool node_free(const rrl_node_use_t& u);

bool node_idle(const rrl_node_use_t& u);

bool node_stuck(const rrl_node_use_t& u, bool open, uint64_t since_read_ms,
                uint64_t timeout_ms);

// RRL_NODE_LOST and RRL_NODE_RETRY, or'ed; 0: closed on purpose.
int node_closed(const rrl_node_use_t& u);

}  // namespace rrl
