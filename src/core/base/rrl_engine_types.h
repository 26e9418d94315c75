/*
 * The types of a worker's Redis engine (engine.hpp): its connections
 * (hiredis contexts, on the event loop the shim lends it), the batches of
 * script calls, the topology of Cluster and Sentinel modes, and the calls
 * of requests. One engine a worker: made in init_process, freed in
 * exit_process. It knows no request: a call reports to the caller's done().
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_engine.h.
 */

#ifndef RRL_ENGINE_TYPES_H
#define RRL_ENGINE_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_metrics_count_types.h"
#include "base/rrl_tls_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct redisAsyncContext;

typedef struct rrl_engine_s       rrl_engine_t;
typedef struct rrl_engine_call_s  rrl_engine_call_t;

/* logged at RRL_LOG_ERR, at most once a second a worker (the shim's rule) */
#define RRL_LOG_FAILURE  3

/*
 * What the shim lends the engine: nginx's event loop. An event is
 * event_size bytes of the engine's memory (an ngx_event_t), set up once by
 * event_init(); handler(arg) runs when its timer fires or, posted, at the
 * end of the loop's turn. Timers of cancelable events do not hold a
 * graceful shutdown.
 */
typedef struct {
    size_t      event_size;
    void      (*event_init)(void *ev, void (*handler)(void *arg), void *arg,
                    int cancelable);
    void      (*timer_add)(void *ev, uint64_t ms);  /* re-armed if set */
    void      (*timer_del)(void *ev);               /* if set */
    int       (*timer_set)(const void *ev);
    void      (*set_cancelable)(void *ev, int cancelable);
    void      (*post)(void *ev);                    /* if not posted */
    void      (*unpost)(void *ev);                  /* if posted */

    uint64_t  (*msec)(void);      /* the loop's time, ms */
    int64_t   (*clock)(void);     /* a fresh monotonic clock, us */
    uint64_t  (*random)(void);
    int       (*quitting)(void);  /* the worker is shutting down */

    /*
     * hiredis on the loop: ac's I/O hooks are the loop's from now on; when
     * the context is freed (by anyone), closed(arg, why) runs, from inside
     * hiredis. NULL: not attached (ac is the caller's to free).
     */
    void     *(*attach)(struct redisAsyncContext *ac,
                    void (*closed)(void *arg, const char *why), void *arg);
    /* writes what hiredis has queued on the connection now */
    void      (*flush)(void *conn);

    /*
     * metrics: a call failed or was not made, RRL_METRICS_ERR_*; a script
     * call's reply came (or was lost): its round trip's bucket
     * (RRL_METRICS_BUCKETS: not timed) and rtt_us, and the error kind it
     * counts as (-1: none)
     */
    void      (*error)(int kind);
    void      (*reply)(size_t bucket, uint64_t rtt_us, int kind);
} rrl_loop_t;

/* an address of redis_ratelimit_server, numeric (resolved at conf time) */
typedef struct {
    const char  *host;        /* NUL-terminated; NULL with unix_path */
    unsigned     port;
    const char  *unix_path;   /* NUL-terminated, or NULL: TCP */
    const char  *name;        /* as written, NUL-terminated: TLS's name */
} rrl_engine_addr_t;

typedef struct {
    int                       mode;      /* 0, RRL_SERVER_CLUSTER, _SENTINEL */
    const rrl_engine_addr_t  *addrs;     /* the server, seeds or sentinels */
    size_t                    naddrs;
    const char               *server;    /* the first, as written: logs */
    size_t                    server_len;
    const char               *sentinel_name;
    size_t                    sentinel_name_len;
    const char               *username;
    size_t                    username_len;
    const char               *password;
    size_t                    password_len;
    const char               *sentinel_password;
    size_t                    sentinel_password_len;
    uint64_t                  db;
    uint64_t                  timeout_ms;
    uint64_t                  connect_timeout_ms;
    uint64_t                  max_failures;   /* the circuit breaker's */
    uint64_t                  cooldown_ms;
    uint64_t                  max_parked;     /* calls at once */
    const char               *sha;            /* the script's, to call it by */
    size_t                    sha_len;
    /* TLS (rrl_tls.h), NULL: plain TCP; the name checked, NULL: see tls.md */
    const struct rrl_tls_s   *tls;
    const struct rrl_tls_s   *sentinel_tls;
    const char               *tls_server_name;
    size_t                    tls_server_name_len;
} rrl_engine_conf_t;

/*
 * What a call brings back, in the caller's memory until done() or detach:
 * rc RRL_OK with nvalues values of the script's reply (its limits in
 * order), or RRL_ERROR, the first failure telling why and where (node: a
 * node's "host:port", valid while the worker runs; NULL: the server).
 */
typedef struct {
    int          rc;
    int64_t     *values;      /* the caller's, capacity of them */
    size_t       capacity;
    size_t       nvalues;
    char         error[128];
    size_t       error_len;
    const char  *node;
    size_t       node_len;
} rrl_engine_result_t;

typedef void (*rrl_engine_done_pt)(void *request, void *data);

#ifdef __cplusplus
}
#endif

#endif /* RRL_ENGINE_TYPES_H */
