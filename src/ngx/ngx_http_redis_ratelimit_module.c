
/*
 * ngx_http_redis_ratelimit_module: limits requests against a Redis shared
 * by a fleet of nginx servers. Directives, the preaccess-phase handler and
 * the variables live here; the Redis link, the header filter and the
 * algorithms (in the C++ core and Lua scripts) live beside it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_NEW      0
#define NGX_HTTP_REDIS_RATELIMIT_WAITING  1
#define NGX_HTTP_REDIS_RATELIMIT_DECIDED  2
#define NGX_HTTP_REDIS_RATELIMIT_APPLIED  3


static ngx_int_t ngx_http_redis_ratelimit_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_redis_ratelimit_prepare(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_loc_conf_t *rlcf,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static ngx_int_t ngx_http_redis_ratelimit_cost(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_limit_t *limit, ngx_str_t *arg,
    ngx_uint_t *cost);
static ngx_int_t ngx_http_redis_ratelimit_wait(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_park(ngx_http_request_t *r);
static void ngx_http_redis_ratelimit_done(ngx_http_request_t *r, void *data);
static void ngx_http_redis_ratelimit_post_resume(ngx_http_request_t *r);
static void ngx_http_redis_ratelimit_resume(ngx_http_request_t *r);
static ngx_int_t ngx_http_redis_ratelimit_answer(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static ngx_int_t ngx_http_redis_ratelimit_send_problem(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_decide(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_fail(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_decide_local(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_decide_cached(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_log_rejection(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_ctx_cleanup(void *data);
static void ngx_http_redis_ratelimit_core_log(void *data, int level,
    const char *msg);

static ngx_int_t ngx_http_redis_ratelimit_status_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_decision_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_zone_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_rtt_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);

static void *ngx_http_redis_ratelimit_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_redis_ratelimit_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static ngx_int_t ngx_http_redis_ratelimit_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_redis_ratelimit_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_redis_ratelimit_init_process(ngx_cycle_t *cycle);
static void ngx_http_redis_ratelimit_exit_process(ngx_cycle_t *cycle);


static ngx_conf_enum_t  ngx_http_redis_ratelimit_headers_values[] = {
    { ngx_string("off"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_OFF },
    { ngx_string("legacy"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_LEGACY },
    { ngx_string("draft"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_DRAFT },
    { ngx_string("both"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_BOTH },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_redis_ratelimit_fail_values[] = {
    { ngx_string("open"), NGX_HTTP_REDIS_RATELIMIT_FAIL_OPEN },
    { ngx_string("closed"), NGX_HTTP_REDIS_RATELIMIT_FAIL_CLOSED },
    { ngx_string("local"), NGX_HTTP_REDIS_RATELIMIT_FAIL_LOCAL },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_redis_ratelimit_log_levels[] = {
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_redis_ratelimit_commands[] = {

    { ngx_string("redis_ratelimit_server"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_server,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_deny_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_deny_cache,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_redis_ratelimit_limit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, status_code),
      NULL },

    { ngx_string("redis_ratelimit_dry_run"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, dry_run),
      NULL },

    { ngx_string("redis_ratelimit_headers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, headers),
      &ngx_http_redis_ratelimit_headers_values },

    { ngx_string("redis_ratelimit_problem_json"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, problem_json),
      NULL },

    { ngx_string("redis_ratelimit_fail"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE123,
      ngx_http_redis_ratelimit_fail_mode,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, fail),
      &ngx_http_redis_ratelimit_fail_values },

    { ngx_string("redis_ratelimit_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, log_level),
      &ngx_http_redis_ratelimit_log_levels },

    { ngx_string("redis_ratelimit_metrics"),
      NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_redis_ratelimit_metrics,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_redis_ratelimit_module_ctx = {
    ngx_http_redis_ratelimit_add_variables, /* preconfiguration */
    ngx_http_redis_ratelimit_init,         /* postconfiguration */

    ngx_http_redis_ratelimit_create_main_conf, /* create main configuration */
    ngx_http_redis_ratelimit_init_main_conf, /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_redis_ratelimit_create_loc_conf, /* create location configuration */
    ngx_http_redis_ratelimit_merge_loc_conf /* merge location configuration */
};


ngx_module_t  ngx_http_redis_ratelimit_module = {
    NGX_MODULE_V1,
    &ngx_http_redis_ratelimit_module_ctx,  /* module context */
    ngx_http_redis_ratelimit_commands,     /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_redis_ratelimit_init_process, /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_redis_ratelimit_exit_process, /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_redis_ratelimit_vars[] = {

    { ngx_string("redis_ratelimit_status"), NULL,
      ngx_http_redis_ratelimit_status_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_remaining"), NULL,
      ngx_http_redis_ratelimit_decision_variable,
      offsetof(rrl_decision_t, remaining),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_zone"), NULL,
      ngx_http_redis_ratelimit_zone_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_reset"), NULL,
      ngx_http_redis_ratelimit_decision_variable,
      offsetof(rrl_decision_t, reset_after),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_rtt"), NULL,
      ngx_http_redis_ratelimit_rtt_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_str_t  ngx_http_redis_ratelimit_status_text[] = {
    ngx_null_string,
    ngx_string("PASSED"),
    ngx_string("REJECTED"),
    ngx_string("REJECTED_DRY_RUN"),
    ngx_string("FAILED_OPEN"),
    ngx_string("FAILED_CLOSED"),
    ngx_string("FAILED_LOCAL")
};


static ngx_int_t
ngx_http_redis_ratelimit_handler(ngx_http_request_t *r)
{
    ngx_int_t                             rc;
    ngx_pool_cleanup_t                   *cln;
    ngx_http_redis_ratelimit_ctx_t       *ctx;
    ngx_http_redis_ratelimit_loc_conf_t  *rlcf;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    /*
     * The context is the main request's: it is limited once, by the first
     * of it and its subrequests to get here. Another one that comes while
     * that call is in flight (two mirrors, parallel SSI includes) waits
     * for it and is resumed with it, then goes on as limited already.
     */

    if (ctx) {
        switch (ctx->state) {

        case NGX_HTTP_REDIS_RATELIMIT_WAITING:
            return ngx_http_redis_ratelimit_wait(r, ctx);

        case NGX_HTTP_REDIS_RATELIMIT_DECIDED:
            if (r != ctx->owner) {
                return NGX_DECLINED;
            }

            ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
            return ngx_http_redis_ratelimit_answer(r, ctx);

        default:
            /* limited once already, before an internal redirect */
            return NGX_DECLINED;
        }
    }

    rlcf = ngx_http_get_module_loc_conf(r, ngx_http_redis_ratelimit_module);

    if (rlcf->limits.nelts == 0) {
        return NGX_DECLINED;
    }

    /* in a pool cleanup, so that it survives internal redirects */
    cln = ngx_pool_cleanup_add(r->pool,
                               sizeof(ngx_http_redis_ratelimit_ctx_t));
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx = cln->data;
    ngx_memzero(ctx, sizeof(ngx_http_redis_ratelimit_ctx_t));
    ctx->conf = rlcf;
    ctx->owner = r;

    cln->handler = ngx_http_redis_ratelimit_ctx_cleanup;
    ngx_http_set_ctx(r, ctx, ngx_http_redis_ratelimit_module);

    rc = ngx_http_redis_ratelimit_prepare(r, rlcf, ctx);

    if (rc != NGX_OK) {
        ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
        return rc;
    }

    if (ctx->nlimits == 0) {
        /* every key was empty: no limit applies */
        ctx->status = NGX_HTTP_REDIS_RATELIMIT_PASSED;
        ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
        return NGX_DECLINED;
    }

    /* read before the call: a rejection learned from it ends by Redis's */
    ctx->sent = ngx_http_redis_ratelimit_clock();

    if (ngx_http_redis_ratelimit_deny_check(r, ctx) == NGX_OK) {
        ngx_http_redis_ratelimit_decide_cached(r, ctx);
        ngx_http_redis_ratelimit_metrics_request(ctx);
        ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
        return ngx_http_redis_ratelimit_answer(r, ctx);
    }

    ctx->call = ngx_http_redis_ratelimit_call(r, ctx,
                                              ngx_http_redis_ratelimit_done);

    if (ctx->call == NULL) {
        ngx_http_redis_ratelimit_fail(r, ctx);
        ngx_http_redis_ratelimit_metrics_request(ctx);
        ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
        return ngx_http_redis_ratelimit_answer(r, ctx);
    }

    ctx->state = NGX_HTTP_REDIS_RATELIMIT_WAITING;

    ngx_http_redis_ratelimit_park(r);

    return NGX_AGAIN;
}


/* r waits for the call in flight of another request of its main request */

static ngx_int_t
ngx_http_redis_ratelimit_wait(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_http_redis_ratelimit_waiter_t  *w;

    if (r == ctx->owner) {
        /* run again while parked: still waiting */
        return NGX_AGAIN;
    }

    w = ngx_palloc(r->pool, sizeof(ngx_http_redis_ratelimit_waiter_t));
    if (w == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    w->request = r;
    w->next = ctx->waiters;
    ctx->waiters = w;

    ngx_http_redis_ratelimit_park(r);

    return NGX_AGAIN;
}


/* a reference on the main request until ngx_http_redis_ratelimit_resume() */

static void
ngx_http_redis_ratelimit_park(ngx_http_request_t *r)
{
    r->main->count++;
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;
}


/* evaluates keys and costs and builds the EVALSHA arguments */

static ngx_int_t
ngx_http_redis_ratelimit_prepare(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_loc_conf_t *rlcf,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    u_char                                *p;
    size_t                                 len, *argvlen;
    ngx_str_t                              key, cost, *keys, *arg;
    ngx_uint_t                             i, n, nkeys, *costs;
    const char                           **argv;
    ngx_http_redis_ratelimit_zone_t       *zone;
    ngx_http_redis_ratelimit_limit_t      *limits, **active;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    limits = rlcf->limits.elts;
    n = rlcf->limits.nelts;

    active = ngx_palloc(r->pool, n * sizeof(ngx_http_redis_ratelimit_limit_t *));
    keys = ngx_palloc(r->pool, n * sizeof(ngx_str_t));
    arg = ngx_palloc(r->pool, n * sizeof(ngx_str_t));
    costs = ngx_palloc(r->pool, n * sizeof(ngx_uint_t));
    argv = ngx_palloc(r->pool, (4 + 6 * n) * sizeof(char *));
    argvlen = ngx_palloc(r->pool, (4 + 6 * n) * sizeof(size_t));

    if (active == NULL || keys == NULL || arg == NULL || costs == NULL
        || argv == NULL || argvlen == NULL)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    nkeys = 0;

    for (i = 0; i < n; i++) {
        zone = limits[i].zone;

        if (ngx_http_complex_value(r, &zone->key, &key) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (key.len == 0) {
            continue;
        }

        if (ngx_http_redis_ratelimit_cost(r, &limits[i], &cost,
                                          &costs[nkeys])
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        p = ngx_pnalloc(r->pool, rrl_key_max_len(zone->name.len));
        if (p == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        len = rrl_key_build((char *) p, (char *) zone->name.data,
                            zone->name.len, zone->algorithm, key.data,
                            key.len);
        if (len == 0) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        active[nkeys] = &limits[i];
        keys[nkeys] = key;
        arg[nkeys] = cost;

        argv[3 + nkeys] = (char *) p;
        argvlen[3 + nkeys] = len;

        nkeys++;
    }

    ctx->nlimits = nkeys;
    ctx->limits = active;
    ctx->keys = keys;
    ctx->costs = costs;

    if (nkeys == 0) {
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    argv[0] = "EVALSHA";
    argvlen[0] = sizeof("EVALSHA") - 1;
    argv[1] = (char *) rmcf->script_sha1.data;
    argvlen[1] = rmcf->script_sha1.len;
    argv[2] = (char *) p;
    argvlen[2] = ngx_sprintf(p, "%ui", nkeys) - p;

    /* ARGV[1]: no injected time, the script asks Redis */
    argv[3 + nkeys] = "";
    argvlen[3 + nkeys] = 0;

    ctx->argc = 4 + nkeys;

    for (i = 0; i < nkeys; i++) {
        zone = active[i]->zone;

#define ngx_http_redis_ratelimit_push(s)                                      \
        argv[ctx->argc] = (char *) (s).data;                                  \
        argvlen[ctx->argc++] = (s).len

        ngx_http_redis_ratelimit_push(zone->algorithm_arg);
        ngx_http_redis_ratelimit_push(zone->limit_arg);
        ngx_http_redis_ratelimit_push(zone->period_arg);
        ngx_http_redis_ratelimit_push(zone->burst_arg);
        ngx_http_redis_ratelimit_push(arg[i]);

#undef ngx_http_redis_ratelimit_push
    }

    ctx->argv = argv;
    ctx->argvlen = argvlen;

    ctx->result.capacity = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * nkeys;
    ctx->result.values = ngx_palloc(r->pool,
                                    ctx->result.capacity * sizeof(int64_t));
    ctx->limit_results = ngx_palloc(r->pool,
                                    nkeys * sizeof(rrl_limit_result_t));

    if (ctx->result.values == NULL || ctx->limit_results == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_OK;
}


/* a constant cost, or the variable's, as the core reads it */

static ngx_int_t
ngx_http_redis_ratelimit_cost(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_limit_t *limit, ngx_str_t *arg, ngx_uint_t *n)
{
    u_char     *p;
    uint64_t    cost;
    ngx_str_t   value;

    if (limit->cost_value == NULL) {
        *arg = limit->cost_arg;
        *n = limit->cost;
        return NGX_OK;
    }

    if (ngx_http_complex_value(r, limit->cost_value, &value) != NGX_OK) {
        return NGX_ERROR;
    }

    /* at most RRL_OVER_COST: it fits an ngx_uint_t of 32 bits */
    cost = rrl_cost_parse(value.data, value.len);

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    arg->data = p;
    arg->len = ngx_sprintf(p, "%uL", cost) - p;
    *n = (ngx_uint_t) cost;

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_done(ngx_http_request_t *r, void *data)
{
    ngx_http_redis_ratelimit_ctx_t *ctx = data;

    ngx_connection_t                   *c;
    ngx_http_redis_ratelimit_waiter_t  *w;

    if (ctx->result.rc == NGX_OK) {
        /* the turn's wait for the batch included: what the client waited */
        ctx->rtt = ngx_http_redis_ratelimit_clock() - ctx->sent;
        ctx->replied = 1;
    }

    ngx_http_redis_ratelimit_decide(r, ctx);
    ngx_http_redis_ratelimit_metrics_request(ctx);

    c = r->connection;

    /*
     * The request first, then those that waited for its call: posted, so
     * that none runs while this list is read (the last one to end may free
     * the main request's pool, and the list with it)
     */

    ngx_http_redis_ratelimit_post_resume(r);

    for (w = ctx->waiters, ctx->waiters = NULL; w; w = w->next) {
        ngx_http_redis_ratelimit_post_resume(w->request);
    }

    ngx_http_run_posted_requests(c);
}


static void
ngx_http_redis_ratelimit_post_resume(ngx_http_request_t *r)
{
    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_redis_ratelimit_resume;

    if (ngx_http_post_request(r, NULL) != NGX_OK) {
        ngx_http_redis_ratelimit_resume(r);
    }
}


static void
ngx_http_redis_ratelimit_resume(ngx_http_request_t *r)
{
    r->write_event_handler = ngx_http_core_run_phases;

    /* drops the reference taken when the request was parked */
    ngx_http_finalize_request(r, NGX_DONE);

    ngx_http_core_run_phases(r);
}


/*
 * The handler's answer once decided: with problem_json, a rejection by the
 * limits is sent here, so that no error_page replaces its body.
 */

static ngx_int_t
ngx_http_redis_ratelimit_answer(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    if (ctx->rc == NGX_DECLINED || !ctx->conf->problem_json
        || !ctx->decided || ctx->decision.passed)
    {
        return ctx->rc;
    }

    ngx_http_finalize_request(r, ngx_http_redis_ratelimit_send_problem(r, ctx));

    return NGX_DONE;
}


static ngx_int_t
ngx_http_redis_ratelimit_send_problem(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    size_t         len;
    ngx_int_t      rc;
    ngx_str_t      type;
    ngx_buf_t     *b;
    rrl_policy_t  *policies;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    policies = ngx_http_redis_ratelimit_policies(r, ctx);
    if (policies == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = rrl_problem_json(NULL, 0, (unsigned) ctx->rc, policies,
                           ctx->limit_results, ctx->nlimits);

    b = ngx_create_temp_buf(r->pool, len);
    if (len == 0 || b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last += rrl_problem_json((char *) b->pos, len, (unsigned) ctx->rc,
                                policies, ctx->limit_results, ctx->nlimits);

    ngx_str_set(&type, "application/problem+json");

    return ngx_http_redis_ratelimit_send_body(r, ctx->rc, &type, b);
}


static void
ngx_http_redis_ratelimit_decide(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_uint_t                             i;
    ngx_http_redis_ratelimit_result_t     *result;
    ngx_http_redis_ratelimit_loc_conf_t   *rlcf;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rlcf = ctx->conf;
    result = &ctx->result;

    ctx->state = NGX_HTTP_REDIS_RATELIMIT_DECIDED;

    if (result->rc != NGX_OK) {
        rmcf = ngx_http_get_module_main_conf(r,
                                             ngx_http_redis_ratelimit_module);

        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: request to %V failed: "
                                     "%*s",
                                     result->node ? result->node
                                                  : &rmcf->server,
                                     result->error_len, result->error);
        ngx_http_redis_ratelimit_fail(r, ctx);
        return;
    }

    if (rrl_reply_decode(result->values, result->nvalues, ctx->nlimits,
                         ctx->limit_results, &ctx->decision)
        != RRL_OK)
    {
        /* the core has logged what was wrong with the reply */
        ngx_http_redis_ratelimit_fail(r, ctx);
        return;
    }

    for (i = 0; i < ctx->nlimits; i++) {
        if ((uint64_t) ctx->limit_results[i].remaining
            > ctx->limits[i]->zone->capacity)
        {
            /* more left than the zone can ever hold: not our script's */
            ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: unexpected script "
                                     "reply: remaining %L of zone \"%V\"",
                                     (int64_t) ctx->limit_results[i].remaining,
                                     &ctx->limits[i]->zone->name);
            ngx_http_redis_ratelimit_fail(r, ctx);
            return;
        }
    }

    ctx->decided = 1;

    if (ctx->decision.passed) {
        ctx->status = NGX_HTTP_REDIS_RATELIMIT_PASSED;
        ctx->rc = NGX_DECLINED;
        return;
    }

    ngx_http_redis_ratelimit_log_rejection(r, ctx);

    if (rlcf->dry_run) {
        ctx->status = NGX_HTTP_REDIS_RATELIMIT_REJECTED_DRY_RUN;
        ctx->rc = NGX_DECLINED;
        return;
    }

    ctx->status = NGX_HTTP_REDIS_RATELIMIT_REJECTED;
    ctx->rc = rlcf->status_code;

    ngx_http_redis_ratelimit_deny_learn(r, ctx);
}


static void
ngx_http_redis_ratelimit_fail(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    if (ctx->conf->fail == NGX_HTTP_REDIS_RATELIMIT_FAIL_LOCAL) {
        ngx_http_redis_ratelimit_decide_local(r, ctx);
        return;
    }

    if (ctx->conf->fail == NGX_HTTP_REDIS_RATELIMIT_FAIL_CLOSED) {
        /* a dry run rejects nothing, whatever the cause */
        ctx->status = NGX_HTTP_REDIS_RATELIMIT_FAILED_CLOSED;
        ctx->rc = ctx->conf->dry_run ? NGX_DECLINED
                                     : (ngx_int_t) ctx->conf->status_code;
        return;
    }

    ctx->status = NGX_HTTP_REDIS_RATELIMIT_FAILED_OPEN;
    ctx->rc = NGX_DECLINED;
}


/*
 * fail local: the decision of this server's shared memory zone, in the
 * shape of the script's reply, so that it is decoded, logged and sent in
 * headers as one from Redis; FAILED_LOCAL whatever it is.
 */

static void
ngx_http_redis_ratelimit_decide_local(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_http_redis_ratelimit_loc_conf_t  *rlcf;

    rlcf = ctx->conf;

    ctx->status = NGX_HTTP_REDIS_RATELIMIT_FAILED_LOCAL;

    if (ngx_http_redis_ratelimit_local_check(r, ctx) != NGX_OK
        || rrl_reply_decode(ctx->result.values, ctx->result.nvalues,
                            ctx->nlimits, ctx->limit_results, &ctx->decision)
           != RRL_OK)
    {
        /* no memory for the key: rejected, as limit_req does */
        ctx->rc = rlcf->dry_run ? NGX_DECLINED : (ngx_int_t) rlcf->status_code;
        return;
    }

    ctx->decided = 1;

    if (ctx->decision.passed) {
        ctx->rc = NGX_DECLINED;
        return;
    }

    ngx_http_redis_ratelimit_log_rejection(r, ctx);

    ctx->rc = rlcf->dry_run ? NGX_DECLINED : (ngx_int_t) rlcf->status_code;
}


/*
 * The deny cache rejected the request as Redis did a previous one of the
 * key: decoded, logged and sent in headers as a rejection from Redis.
 */

static void
ngx_http_redis_ratelimit_decide_cached(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ctx->decided = 1;
    ctx->cached = 1;
    ctx->status = NGX_HTTP_REDIS_RATELIMIT_REJECTED;
    ctx->rc = ctx->conf->status_code;

    ngx_http_redis_ratelimit_log_rejection(r, ctx);
}


static void
ngx_http_redis_ratelimit_log_rejection(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    char                             *how;
    size_t                            len;
    ngx_str_t                        *key;
    ngx_http_redis_ratelimit_zone_t  *zone;
    u_char                            printable[256];

    how = ctx->cached ? " (cached)"
          : (ctx->status == NGX_HTTP_REDIS_RATELIMIT_FAILED_LOCAL)
            ? " (local)" : "";

    zone = ctx->limits[ctx->decision.reported]->zone;
    key = &ctx->keys[ctx->decision.reported];

    len = rrl_printable((char *) printable, sizeof(printable), key->data,
                        key->len);

    ngx_log_error(ctx->conf->log_level, r->connection->log, 0,
                  "limiting requests%s by zone \"%V\"%s, key \"%*s\", "
                  "rate %V, retry after %Ls",
                  ctx->conf->dry_run ? ", dry run," : "", &zone->name, how,
                  len, printable, &zone->rate,
                  (int64_t) ctx->decision.retry_after);
}


ngx_http_redis_ratelimit_ctx_t *
ngx_http_redis_ratelimit_get_ctx(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t              *cln;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    r = r->main;

    ctx = ngx_http_get_module_ctx(r, ngx_http_redis_ratelimit_module);
    if (ctx) {
        return ctx;
    }

    /* an internal redirect wiped r->ctx; the pool still holds ours */

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_redis_ratelimit_ctx_cleanup) {
            ctx = cln->data;
            ngx_http_set_ctx(r, ctx, ngx_http_redis_ratelimit_module);
            return ctx;
        }
    }

    return NULL;
}


static void
ngx_http_redis_ratelimit_ctx_cleanup(void *data)
{
    ngx_http_redis_ratelimit_ctx_t *ctx = data;

    if (ctx->call) {
        /* the client went away with the reply in flight */
        ngx_http_redis_ratelimit_call_detach(ctx->call);
    }
}


static ngx_int_t
ngx_http_redis_ratelimit_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || ctx->status == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = ngx_http_redis_ratelimit_status_text[ctx->status].len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = ngx_http_redis_ratelimit_status_text[ctx->status].data;

    return NGX_OK;
}


/* an integer of the decision: data is its offset in rrl_decision_t */

static ngx_int_t
ngx_http_redis_ratelimit_decision_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                          *p;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%L",
                         *(int64_t *) ((u_char *) &ctx->decision + data))
             - p;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_zone_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_redis_ratelimit_zone_t  *zone;
    ngx_http_redis_ratelimit_ctx_t   *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided) {
        v->not_found = 1;
        return NGX_OK;
    }

    zone = ctx->limits[ctx->decision.reported]->zone;

    v->len = zone->name.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = zone->name.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_rtt_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                          *p;
    int64_t                          us;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->replied) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + sizeof(".000") - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    us = ngx_max(ctx->rtt, 0);

    /* ms with 3 decimals, as $upstream_response_time has them for s */
    v->len = ngx_sprintf(p, "%L.%03L", us / 1000, us % 1000) - p;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_core_log(void *data, int level, const char *msg)
{
    ngx_uint_t  ngx_level;

    if (level == RRL_LOG_ERR) {
        /* about replies: a broken Redis must not flood the log */
        ngx_http_redis_ratelimit_log_failure(ngx_cycle->log,
                                             "redis_ratelimit: %s", msg);
        return;
    }

    ngx_level = (level == RRL_LOG_WARN) ? NGX_LOG_WARN : NGX_LOG_INFO;

    ngx_log_error(ngx_level, ngx_cycle->log, 0, "redis_ratelimit: %s", msg);
}


static void *
ngx_http_redis_ratelimit_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_redis_ratelimit_main_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_redis_ratelimit_main_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->server = { 0, NULL };
     *     conf->host = { 0, NULL };
     *     conf->unix_path = { 0, NULL };
     *     conf->password = { 0, NULL };
     *     conf->db = 0;
     *     conf->deny_zone = NULL;
     */

    conf->deny_size = NGX_CONF_UNSET_SIZE;

    if (ngx_array_init(&conf->zones, cf->pool, 4,
                       sizeof(ngx_http_redis_ratelimit_zone_t))
        != NGX_OK
        || ngx_array_init(&conf->addrs, cf->pool, 1,
                          sizeof(ngx_http_redis_ratelimit_addr_t))
           != NGX_OK)
    {
        return NULL;
    }

    return conf;
}


static char *
ngx_http_redis_ratelimit_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    const char                       *sha1;
    ngx_http_redis_ratelimit_zone_t  *zone;

    if (rmcf->zones.nelts && rmcf->server.len == 0) {
        zone = rmcf->zones.elts;

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"redis_ratelimit_zone\" is used in %s:%ui, "
                      "but no \"redis_ratelimit_server\" is defined",
                      zone->file, zone->line);
        return NGX_CONF_ERROR;
    }

    sha1 = rrl_script_sha1();
    if (sha1 == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_http_redis_ratelimit_local_init_conf(cf);

    if (ngx_http_redis_ratelimit_deny_init_conf(cf, rmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    rmcf->script_sha1.data = (u_char *) sha1;
    rmcf->script_sha1.len = ngx_strlen(sha1);

    return NGX_CONF_OK;
}


static void *
ngx_http_redis_ratelimit_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_redis_ratelimit_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_redis_ratelimit_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->limits.elts = NULL;
     *     conf->local_zone = NULL;
     *     conf->local_share = 0;
     */

    conf->status_code = NGX_CONF_UNSET_UINT;
    conf->dry_run = NGX_CONF_UNSET;
    conf->headers = NGX_CONF_UNSET_UINT;
    conf->problem_json = NGX_CONF_UNSET;
    conf->fail = NGX_CONF_UNSET_UINT;
    conf->log_level = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_redis_ratelimit_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_redis_ratelimit_loc_conf_t *prev = parent;
    ngx_http_redis_ratelimit_loc_conf_t *conf = child;

    ngx_uint_t                         i;
    ngx_http_redis_ratelimit_limit_t  *limit;

    if (conf->limits.elts == NULL) {
        conf->limits = prev->limits;
    }

    if (ngx_http_redis_ratelimit_resolve_limits(cf, &conf->limits) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* in a cluster, their calls reserve and release: see the deny cache */
    if (conf->limits.nelts > 1) {
        limit = conf->limits.elts;

        for (i = 0; i < conf->limits.nelts; i++) {
            limit[i].zone->combined = 1;
        }
    }

    ngx_conf_merge_uint_value(conf->status_code, prev->status_code,
                              NGX_HTTP_TOO_MANY_REQUESTS);

    ngx_conf_merge_value(conf->dry_run, prev->dry_run, 0);

    ngx_conf_merge_uint_value(conf->headers, prev->headers,
                              NGX_HTTP_REDIS_RATELIMIT_HEADERS_LEGACY);
    ngx_conf_merge_value(conf->problem_json, prev->problem_json, 0);

    /* the mode and its parameters are one directive: inherited together */
    if (conf->fail == NGX_CONF_UNSET_UINT) {
        conf->fail = NGX_HTTP_REDIS_RATELIMIT_FAIL_OPEN;

        if (prev->fail != NGX_CONF_UNSET_UINT) {
            conf->fail = prev->fail;
            conf->local_zone = prev->local_zone;
            conf->local_share = prev->local_share;
        }
    }

    if (conf->local_share == 0) {
        conf->local_share = 1;
    }

    ngx_conf_merge_uint_value(conf->log_level, prev->log_level, NGX_LOG_ERR);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_redis_ratelimit_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    rrl_set_logger(ngx_http_redis_ratelimit_core_log, NULL);

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /* where limit_req runs: before access checks, so "satisfy" is moot */
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_redis_ratelimit_handler;

    return ngx_http_redis_ratelimit_headers_init(cf);
}


static ngx_int_t
ngx_http_redis_ratelimit_init_process(ngx_cycle_t *cycle)
{
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    rmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_redis_ratelimit_module);

    if (rmcf == NULL || rmcf->server.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_redis_ratelimit_link_init(cycle, rmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_redis_ratelimit_metrics_init_process(cycle);
}


static void
ngx_http_redis_ratelimit_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_redis_ratelimit_metrics_exit_process();
    ngx_http_redis_ratelimit_link_exit();
}
