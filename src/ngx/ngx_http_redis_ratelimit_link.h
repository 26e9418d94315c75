
/*
 * The per-worker Redis link, inside: the nodes (one hiredis connection to
 * one address each), and what routes calls to them in each mode: one
 * server, the primary a Sentinel names, or the primary of a Cluster slot.
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_DATA      0   /* a Redis of limits */
#define NGX_HTTP_REDIS_RATELIMIT_SENTINEL  1


typedef struct {
    ngx_queue_t                  queue;       /* in the link's nodes */
    ngx_uint_t                   role;
    ngx_str_t                    name;        /* "host:port", for logs */
    u_char                      *host;        /* NUL-terminated */
    in_port_t                    port;
    u_char                      *unix_path;   /* NULL: TCP */
    ngx_log_t                   *log;

    redisAsyncContext           *ac;          /* NULL: not connected */
    ngx_connection_t            *connection;
    ngx_event_t                  connect_timer;
    ngx_event_t                  reconnect_timer;
    ngx_msec_t                   backoff;

    rrl_breaker_t                breaker;     /* the core's state machine */
    unsigned                     dropping:1;  /* freeing a stuck context */

    ngx_uint_t                   in_flight;   /* calls hiredis holds */
    ngx_uint_t                   batches;     /* open batches for it */
    size_t                       room;        /* for its names, after it */
    ngx_msec_t                   last_read;

    /* commands sent and replies read on this connection */
    uint64_t                     sent;
    uint64_t                     replies;
    unsigned                     unsolicited:1;

    unsigned                     connected:1;
    unsigned                     writing:1;   /* hiredis has output */
    unsigned                     reconnect:1; /* in use: reconnect if lost */
    unsigned                     used:1;      /* ever routed to */
    unsigned                     mapped:1;    /* a primary in the slot map */
} ngx_http_redis_ratelimit_node_t;


typedef struct {
    ngx_http_redis_ratelimit_main_conf_t  *conf;
    ngx_log_t                   *log;
    ngx_queue_t                  nodes;
    ngx_uint_t                   nnodes;
    ngx_uint_t                   parked;      /* calls with a request */
    ngx_event_t                  flush;       /* sends open batches */
    unsigned                     edge:1;      /* edge-triggered events */
    unsigned                     exiting:1;

    /* one server, or the primary a Sentinel names */
    ngx_http_redis_ratelimit_node_t   *primary;

    /* Cluster: the primary of each slot, NULL where none is known */
    ngx_http_redis_ratelimit_node_t  **slots;
} ngx_http_redis_ratelimit_link_t;


extern ngx_http_redis_ratelimit_link_t  ngx_http_redis_ratelimit_link;


/* node: one connection */
ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_node_get(
    ngx_uint_t role, u_char *host, in_port_t port, u_char *unix_path);
void ngx_http_redis_ratelimit_node_connect(
    ngx_http_redis_ratelimit_node_t *node);
/* in use, or no more: a node out of use is closed once idle */
void ngx_http_redis_ratelimit_node_use(ngx_http_redis_ratelimit_node_t *node,
    ngx_uint_t use);
void ngx_http_redis_ratelimit_node_idle(ngx_http_redis_ratelimit_node_t *node);
void ngx_http_redis_ratelimit_node_close(
    ngx_http_redis_ratelimit_node_t *node);
ngx_int_t ngx_http_redis_ratelimit_command(
    ngx_http_redis_ratelimit_node_t *node, redisCallbackFn *fn,
    void *privdata, const char *format, ...);
/* a command already in RESP, as hiredis would format it */
ngx_int_t ngx_http_redis_ratelimit_command_formatted(
    ngx_http_redis_ratelimit_node_t *node, redisCallbackFn *fn,
    void *privdata, const char *command, size_t len);
ngx_int_t ngx_http_redis_ratelimit_command_argv(
    ngx_http_redis_ratelimit_node_t *node, redisCallbackFn *fn,
    void *privdata, int argc, const char **argv, const size_t *argvlen);
/* RRL_BREAKER_CALL, _PROBE (the caller's call is the probe) or _REFUSE */
ngx_int_t ngx_http_redis_ratelimit_circuit_allows(
    ngx_http_redis_ratelimit_node_t *node);
void ngx_http_redis_ratelimit_circuit_outcome(
    ngx_http_redis_ratelimit_node_t *node, ngx_uint_t ok);
/* a probe granted and never sent */
void ngx_http_redis_ratelimit_circuit_abandon(
    ngx_http_redis_ratelimit_node_t *node);
/* converts a reply for the core's parsers; NULL: no memory */
rrl_value_t *ngx_http_redis_ratelimit_value(ngx_pool_t *pool,
    redisReply *reply);

/* called by a node: its connection is lost, or could not be made */
void ngx_http_redis_ratelimit_node_lost(ngx_http_redis_ratelimit_node_t *node);

/* cluster: the slot map */
ngx_int_t ngx_http_redis_ratelimit_cluster_init(ngx_cycle_t *cycle);
void ngx_http_redis_ratelimit_cluster_refresh(void);
void ngx_http_redis_ratelimit_cluster_exit(void);

/* sentinel: which node is the primary */
ngx_int_t ngx_http_redis_ratelimit_sentinel_init(ngx_cycle_t *cycle);
void ngx_http_redis_ratelimit_sentinel_ask(void);
void ngx_http_redis_ratelimit_sentinel_exit(void);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_ */
