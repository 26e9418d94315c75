/*
 * The C API of a node's use (node_use.hpp): when a node's connection is
 * closed, dropped or retried, and which node a new address may take over.
 */

#ifndef RRL_NODE_USE_H
#define RRL_NODE_USE_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the rules need to know of a node (and of its worker) */
typedef struct {
    int       data;        /* a Redis of limits, not a sentinel */
    int       context;     /* a hiredis context is open */
    int       timer;       /* a connect or reconnect timer is set */
    int       reconnect;   /* in use: reconnected if lost */
    int       used;        /* ever routed to */
    int       mapped;      /* named by the slot map or the sentinels */
    int       dropping;    /* its context is being freed on purpose */
    int       exiting;     /* the worker closes its nodes for good */
    int       quitting;    /* nginx is shutting down: nothing reconnects */
    uint64_t  in_flight;   /* calls hiredis holds */
    uint64_t  batches;     /* open batches for it */
} rrl_node_use_t;

/* 1: nothing uses or points to the node, a new address may take it over */
int rrl_node_free(const rrl_node_use_t *u) RRL_NOEXCEPT;

/* 1: the node is out of use and no call waits on it: close it now */
int rrl_node_idle(const rrl_node_use_t *u) RRL_NOEXCEPT;

/*
 * 1: the circuit opened (open) on a connection that owes replies and read
 * nothing for a whole timeout (since_read_ms >= timeout_ms): it is stuck,
 * drop it.
 */
int rrl_node_stuck(const rrl_node_use_t *u, int open, uint64_t since_read_ms,
    uint64_t timeout_ms) RRL_NOEXCEPT;

/* what follows the loss of a node's context (u as it was before it) */
#define RRL_NODE_LOST   1   /* not closed on purpose: log it, tell the link */
#define RRL_NODE_RETRY  2   /* reconnect after the backoff */

int rrl_node_closed(const rrl_node_use_t *u) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_NODE_USE_H */
