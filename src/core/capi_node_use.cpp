// A node's use, extern "C" (rrl_node_use.h); none of these can throw.
#include "node_use.hpp"
#include "rrl_node_use.h"

int rrl_node_free(const rrl_node_use_t* u) noexcept {
    return rrl::node_free(*u);
}

int rrl_node_idle(const rrl_node_use_t* u) noexcept {
    return rrl::node_idle(*u);
}

int rrl_node_stuck(const rrl_node_use_t* u, int open, uint64_t since_read_ms,
                   uint64_t timeout_ms) noexcept {
    return rrl::node_stuck(*u, open != 0, since_read_ms, timeout_ms);
}

int rrl_node_closed(const rrl_node_use_t* u) noexcept {
    return rrl::node_closed(*u);
}
