
/*
 * Types shared by the shim's files: configuration, the per-request context
 * and the functions each file offers the others.
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_MODULE_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "api/rrl.h"
#include "api/rrl_conf.h"
#include "api/rrl_decision.h"
#include "api/rrl_engine.h"
#include "api/rrl_lease_call.h"
#include "api/rrl_request.h"
#include "api/rrl_shown.h"


/* a string of the core's configuration (rrl_conf_str_t), as nginx's */
#define ngx_http_redis_ratelimit_str(s, cs)                                  \
    ((s)->data = (u_char *) (cs)->data, (s)->len = (cs)->len)


typedef struct {
    ngx_str_t                    name;
    ngx_http_complex_value_t     key;
    rrl_call_limit_t             call;        /* its part of a request's */
    ngx_uint_t                   capacity;    /* the largest cost, on idle */
    ngx_str_t                    rate;        /* as written, for logs */

    /* in some location with other limits: see the deny cache's usable() */
    unsigned                     combined:1;
    unsigned                     settle:1;    /* a limit on it has settle= */
    ngx_uint_t                   lease;       /* P of lease=P%, 0: none */

    void                        *metrics;     /* its counters, or NULL */

    u_char                      *file;
    ngx_uint_t                   line;
} ngx_http_redis_ratelimit_zone_t;


typedef struct {
    ngx_str_t                    zone_name;
    ngx_http_redis_ratelimit_zone_t  *zone;   /* resolved at merge */
    ngx_http_complex_value_t    *cost_value; /* NULL: constant cost */
    ngx_http_complex_value_t    *settle;     /* settle=VALUE, or NULL */
    ngx_uint_t                   cost;
    uint64_t                     delay;       /* RRL_DELAY_NONE: nodelay */

    u_char                      *file;
    ngx_uint_t                   line;
} ngx_http_redis_ratelimit_limit_t;


typedef struct {
    ngx_str_t                    server;      /* the first address */
    ngx_array_t                  addrs;       /* the engine's: server, seeds */
    rrl_engine_conf_t            engine;      /* but addrs, server and sha */
    ngx_msec_t                   timeout;     /* engine's, for the leases */

    ngx_array_t                  zones;       /* of zone_t */

    ngx_uint_t                   deny_size;   /* 0: off */
    ngx_shm_zone_t              *deny_zone;   /* NULL: off */

    ngx_shm_zone_t              *metrics_zone; /* NULL: no metrics */
    ngx_flag_t                   leases;      /* a zone has lease= */
    ngx_uint_t                   lease_size;
    ngx_flag_t                   settle;      /* a limit has settle= */
    ngx_shm_zone_t              *lease_zone;

    ngx_str_t                    script_sha1;
} ngx_http_redis_ratelimit_main_conf_t;


typedef struct {
    ngx_array_t                  limits;      /* of limit_t */
    ngx_uint_t                   status_code;
    ngx_flag_t                   dry_run;
    ngx_uint_t                   headers;
    ngx_flag_t                   problem_json;
    ngx_uint_t                   fail;
    ngx_shm_zone_t              *local_zone;  /* fail local */
    ngx_uint_t                   local_share; /* K of local_share=1/K */
    ngx_uint_t                   log_level;
} ngx_http_redis_ratelimit_loc_conf_t;


/* a request that waits for another's call: see the handler */
typedef struct ngx_http_redis_ratelimit_waiter_s
    ngx_http_redis_ratelimit_waiter_t;

struct ngx_http_redis_ratelimit_waiter_s {
    ngx_http_request_t                  *request;
    ngx_http_redis_ratelimit_waiter_t   *next;
};


typedef struct {
    ngx_uint_t                   state;
    ngx_int_t                    rc;          /* the handler's answer */
    ngx_http_request_t          *owner;       /* the request that decides */
    ngx_http_redis_ratelimit_waiter_t   *waiters; /* parked on its call */
    ngx_uint_t                   status;      /* $redis_ratelimit_status */
    ngx_http_redis_ratelimit_loc_conf_t  *conf;
    rrl_engine_call_t           *call;        /* the engine's, in flight */

    ngx_uint_t                   nlimits;     /* those with a key */
    ngx_http_redis_ratelimit_limit_t    **limits;
    /* the core's: their keys and costs, the reply, results and decision */
    rrl_request_t               *request;

    int64_t                      sent;        /* deny cache clock, us */
    int64_t                      rtt;         /* us, when replied */
    int64_t                      delay;       /* us, delay=D: the variable */
    ngx_msec_t                   wait;        /* the delay to apply */
    ngx_event_t                  delay_timer; /* set while delayed */

    unsigned                     show;        /* RRL_SHOW_*: headers */

    unsigned                     decided:1;   /* decision is valid */
    unsigned                     problem:1;   /* a problem+json body */
    unsigned                     headers_done:1;
    unsigned                     replied:1;   /* Redis answered: rtt */
    unsigned                     leased:1;    /* decided from the leases */
    unsigned                     settled:1;   /* settle= done, once */
} ngx_http_redis_ratelimit_ctx_t;


/* handler: the preaccess phase and the request's context */
ngx_int_t ngx_http_redis_ratelimit_handler(ngx_http_request_t *r);
ngx_http_redis_ratelimit_ctx_t *ngx_http_redis_ratelimit_get_ctx(
    ngx_http_request_t *r);

/* conf: the directives' parsers (the grammar is the core's) */
char *ngx_http_redis_ratelimit_server(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_redis_ratelimit_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_redis_ratelimit_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_redis_ratelimit_set_value(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_redis_ratelimit_fail_mode(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_redis_ratelimit_log_level(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
/* binds the limits to their zones, defined before or after them */
ngx_int_t ngx_http_redis_ratelimit_resolve_limits(ngx_conf_t *cf,
    ngx_array_t *limits);
/*
 * A word to the core, or the end of the directive (NULL): NGX_DECLINED
 * when the word is the shim's, NGX_ERROR once the core's message is logged.
 */
ngx_int_t ngx_http_redis_ratelimit_conf_word(ngx_conf_t *cf, rrl_conf_t *c,
    ngx_str_t *word);
/* rrl_conf_init() with nginx's parsers of times and sizes */
void ngx_http_redis_ratelimit_conf_init(rrl_conf_t *c, int kind,
    ngx_command_t *cmd);
/* decision: applies the core's verdict on an outcome (REPLY: the reply's) */
void ngx_http_redis_ratelimit_decide(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_int_t outcome);
/* the handler's rc once decided; a problem+json rejection is sent here */
ngx_int_t ngx_http_redis_ratelimit_answer(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
/* what the request shows in headers and variables: the core writes it */
void ngx_http_redis_ratelimit_shown(ngx_http_redis_ratelimit_ctx_t *ctx,
    rrl_shown_t *shown);

/* variables */
ngx_int_t ngx_http_redis_ratelimit_add_variables(ngx_conf_t *cf);

/* util: the bottom layer, calling no other file */

/* errors logged at most once a second per worker */
void ngx_http_redis_ratelimit_log_failure(ngx_log_t *log, const char *fmt,
    ...);
/* a fresh reading of the monotonic clock, in us */
int64_t ngx_http_redis_ratelimit_clock(void);
/* sends a response of the module's own: b holds the whole body */
ngx_int_t ngx_http_redis_ratelimit_send_body(ngx_http_request_t *r,
    ngx_uint_t status, ngx_str_t *type, ngx_buf_t *b);

/* adapter: hiredis on nginx's event loop, the loop's attach() and flush() */
void *ngx_http_redis_ratelimit_attach(struct redisAsyncContext *ac,
    void (*closed)(void *arg, const char *why), void *arg);
void ngx_http_redis_ratelimit_flush(void *conn);

/* link: the worker's Redis engine, on nginx's event loop */
ngx_int_t ngx_http_redis_ratelimit_link_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf);
void ngx_http_redis_ratelimit_link_exit(void);
/*
 * The script call of ctx->request, its reply there (rrl_engine_call()):
 * done(r, ctx) runs once, from the event loop; rrl_engine_detach() if the
 * request goes first. NULL: not made now, decide at once.
 */
rrl_engine_call_t *ngx_http_redis_ratelimit_call(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, rrl_engine_done_pt done);
/* the worker's engine, for a lease's renewal (rrl_lease_renew()) */
rrl_engine_t *ngx_http_redis_ratelimit_engine(void);

/*
 * lease: "lease=P%", at now (the monotonic clock, us). Without ask, NGX_OK:
 * decided from the leases of every limit, into ctx->request. NGX_DECLINED:
 * ask Redis (with ask, the request's limits carry what the leases want).
 */
ngx_int_t ngx_http_redis_ratelimit_lease_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_uint_t ask, int64_t now);
/* a call asked ends (RRL_LEASE_CALL_*); NGX_OK: refused, decided anew */
ngx_int_t ngx_http_redis_ratelimit_lease_learn(
    ngx_http_redis_ratelimit_ctx_t *ctx, int how);

/* local: "redis_ratelimit_fail local", decided in a shared memory zone */

/* the zone of "local_zone=NAME:SIZE", or the default one, checked in fc */
char *ngx_http_redis_ratelimit_local_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    rrl_fail_conf_t *fc, ngx_shm_zone_t **zone);

/* every limit decided in the local zone, all or nothing, into the reply */
ngx_int_t ngx_http_redis_ratelimit_local_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);

/* deny cache: rejections learned from Redis, answered without it */

/* the zone, unless "off" or no zone is defined */
ngx_int_t ngx_http_redis_ratelimit_deny_init_conf(ngx_conf_t *cf,
    ngx_http_redis_ratelimit_main_conf_t *rmcf);

/*
 * NGX_OK: a limit of the request is in the cache, rejected until later
 * than ctx->sent; its answer is in ctx->request.
 * NGX_DECLINED: ask Redis.
 */
ngx_int_t ngx_http_redis_ratelimit_deny_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
/* keeps the limits that rejected the request in Redis's decoded reply */
void ngx_http_redis_ratelimit_deny_learn(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
/* one limit's result in Redis, kept if a rejection; key NULL: built */
void ngx_http_redis_ratelimit_deny_keep(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t dry_run, ngx_str_t *key, const rrl_call_limit_t *call,
    const rrl_limit_result_t *result, int64_t sent);

/* metrics: "redis_ratelimit_metrics", counters in shared memory */

char *ngx_http_redis_ratelimit_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_redis_ratelimit_metrics_init_process(ngx_cycle_t *cycle);
void ngx_http_redis_ratelimit_metrics_exit_process(void);
/* a request decided: ctx->status, once in each zone of its limits */
void ngx_http_redis_ratelimit_metrics_request(
    ngx_http_redis_ratelimit_ctx_t *ctx);
/* counter (-1: none) of a zone's family at offset (RRL_METRICS_ZONE_*) */
void ngx_http_redis_ratelimit_metrics_count(
    ngx_http_redis_ratelimit_zone_t *zone, ngx_int_t offset, int counter);
/* a Redis call failed, or was not made: RRL_METRICS_ERR_* */
void ngx_http_redis_ratelimit_metrics_error(int kind);
/* a script call's reply: bucket (RRL_METRICS_BUCKETS: none), rtt, kind */
void ngx_http_redis_ratelimit_metrics_reply(size_t bucket, uint64_t rtt,
    int kind);
/* the worker's gauges are the engine's (NULL: none), every second */
void ngx_http_redis_ratelimit_metrics_gauges(rrl_engine_t *engine);

/* settle: the log phase of settle=VALUE, when some limit has it */
ngx_int_t ngx_http_redis_ratelimit_settle_handler(ngx_http_request_t *r);

/* headers */
ngx_int_t ngx_http_redis_ratelimit_headers_init(ngx_conf_t *cf);


extern ngx_module_t  ngx_http_redis_ratelimit_module;


#endif /* _NGX_HTTP_REDIS_RATELIMIT_MODULE_H_INCLUDED_ */
