
/*
 * A node: one hiredis connection to one address (node.c), on nginx's event
 * loop (adapter.c). Its owner, the link, is told of a lost connection
 * through the handler it gives to node_init().
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_NODE_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_NODE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "rrl_reply_count.h"


#define NGX_HTTP_REDIS_RATELIMIT_DATA      0   /* a Redis of limits */
#define NGX_HTTP_REDIS_RATELIMIT_SENTINEL  1


typedef struct ngx_http_redis_ratelimit_node_s
    ngx_http_redis_ratelimit_node_t;

/* called by the adapter: the node's context is being freed, for reason */
typedef void (*ngx_http_redis_ratelimit_closed_pt)(
    ngx_http_redis_ratelimit_node_t *node, const char *reason);

/* called by a node: its connection is lost, or could not be made */
typedef void (*ngx_http_redis_ratelimit_lost_pt)(
    ngx_http_redis_ratelimit_node_t *node);


struct ngx_http_redis_ratelimit_node_s {
    ngx_queue_t                  queue;       /* in the link's nodes */
    ngx_uint_t                   role;
    ngx_str_t                    name;        /* "host:port", for logs */
    u_char                      *host;        /* NUL-terminated */
    in_port_t                    port;
    u_char                      *unix_path;   /* NULL: TCP */
    ngx_log_t                   *log;

    redisAsyncContext           *ac;          /* NULL: not connected */
    ngx_connection_t            *connection;
    ngx_http_redis_ratelimit_closed_pt  closed;
    ngx_event_t                  connect_timer;
    ngx_event_t                  reconnect_timer;
    uint64_t                     backoff;     /* ms; 0: the last one worked */

    rrl_breaker_t                breaker;     /* the core's state machine */
    unsigned                     dropping:1;  /* freeing a stuck context */

    ngx_uint_t                   in_flight;   /* calls hiredis holds */
    ngx_uint_t                   batches;     /* open batches for it */
    ngx_msec_t                   last_read;

    rrl_reply_count_t            count;       /* commands and replies */

    unsigned                     connected:1;
    unsigned                     writing:1;   /* hiredis has output */
    unsigned                     reconnect:1; /* in use: reconnect if lost */
    unsigned                     used:1;      /* ever routed to */
    unsigned                     mapped:1;    /* a primary in the slot map */
};


/* the worker's nodes go in the list nodes; lost is called up */
void ngx_http_redis_ratelimit_node_init(
    ngx_http_redis_ratelimit_main_conf_t *conf, ngx_log_t *log,
    ngx_queue_t *nodes, ngx_http_redis_ratelimit_lost_pt lost);
/* the worker exits: every node closes, none reconnects */
void ngx_http_redis_ratelimit_node_exit(void);
ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_node_get(
    ngx_uint_t role, u_char *host, in_port_t port, u_char *unix_path);
void ngx_http_redis_ratelimit_node_connect(
    ngx_http_redis_ratelimit_node_t *node);
/* in use, or no more: a node out of use is closed once idle */
void ngx_http_redis_ratelimit_node_use(ngx_http_redis_ratelimit_node_t *node,
    ngx_uint_t use);
void ngx_http_redis_ratelimit_node_idle(ngx_http_redis_ratelimit_node_t *node);
/* RRL_BREAKER_CALL, _PROBE (the caller's call is the probe) or _REFUSE */
ngx_int_t ngx_http_redis_ratelimit_circuit_allows(
    ngx_http_redis_ratelimit_node_t *node);
void ngx_http_redis_ratelimit_circuit_outcome(
    ngx_http_redis_ratelimit_node_t *node, ngx_uint_t ok);
/* a probe granted and never sent */
void ngx_http_redis_ratelimit_circuit_abandon(
    ngx_http_redis_ratelimit_node_t *node);

/* adapter: hiredis on nginx's event loop */
ngx_int_t ngx_http_redis_ratelimit_attach(
    ngx_http_redis_ratelimit_node_t *node, redisAsyncContext *ac,
    ngx_http_redis_ratelimit_closed_pt closed);
/* send every command through these: they count the replies owed */
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
/* converts a reply for the core's parsers; NULL: no memory */
rrl_value_t *ngx_http_redis_ratelimit_value(ngx_pool_t *pool,
    redisReply *reply);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_NODE_H_INCLUDED_ */
