
/*
 * The preaccess-phase handler: limits a request once, parks it while its
 * Redis call is in flight, applies the decision when it is resumed, and
 * parks it on a timer if it passed with a delay (delay=D).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_NEW      0
#define NGX_HTTP_REDIS_RATELIMIT_WAITING  1
#define NGX_HTTP_REDIS_RATELIMIT_DECIDED  2
#define NGX_HTTP_REDIS_RATELIMIT_APPLIED  3
#define NGX_HTTP_REDIS_RATELIMIT_DELAYED  4


static ngx_int_t ngx_http_redis_ratelimit_prepare(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_loc_conf_t *rlcf,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_park(ngx_http_request_t *r);
static ngx_int_t ngx_http_redis_ratelimit_apply(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_delay_end(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_done(void *request, void *data);
static void ngx_http_redis_ratelimit_post_resume(ngx_http_request_t *r);
static void ngx_http_redis_ratelimit_resume(ngx_http_request_t *r);
static void ngx_http_redis_ratelimit_ctx_cleanup(void *data);


ngx_int_t
ngx_http_redis_ratelimit_handler(ngx_http_request_t *r)
{
    ngx_int_t                             rc, outcome;
    ngx_pool_cleanup_t                   *cln;
    ngx_http_redis_ratelimit_ctx_t       *ctx;
    ngx_http_redis_ratelimit_waiter_t    *w;
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

        case NGX_HTTP_REDIS_RATELIMIT_DECIDED:
            if (r != ctx->owner) {
                return NGX_DECLINED;
            }

            return ngx_http_redis_ratelimit_apply(r, ctx);

        case NGX_HTTP_REDIS_RATELIMIT_DELAYED:
            /* only the owner waits: the others go on as limited */
            return (r == ctx->owner) ? NGX_AGAIN : NGX_DECLINED;

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
        outcome = RRL_OUTCOME_NO_KEY;

    } else {
        /* read before the call: a rejection learned from it ends by Redis's */
        ctx->sent = ngx_http_redis_ratelimit_clock();

        rc = ngx_http_redis_ratelimit_lease_check(r, ctx, 0, ctx->sent);

        if (rc != NGX_DECLINED) {
            /* decided from leases, as by a reply of Redis's (or failed) */
            outcome = (rc == NGX_OK) ? RRL_OUTCOME_REPLY : RRL_OUTCOME_FAILED;

        } else if (ngx_http_redis_ratelimit_deny_check(r, ctx) == NGX_OK) {
            outcome = RRL_OUTCOME_CACHED;

        } else {
            /* what the leases ask of the call: given back once it is made */
            ctx->call = (ngx_http_redis_ratelimit_lease_check(r, ctx, 1,
                                                              ctx->sent)
                         == NGX_DECLINED)
                        ? ngx_http_redis_ratelimit_call(r, ctx,
                                                ngx_http_redis_ratelimit_done)
                        : NULL;
            if (ctx->call) {
                ctx->state = NGX_HTTP_REDIS_RATELIMIT_WAITING;
                ngx_http_redis_ratelimit_park(r);
                return NGX_AGAIN;
            }

            ngx_http_redis_ratelimit_lease_learn(ctx, RRL_LEASE_CALL_UNSENT);
            outcome = RRL_OUTCOME_FAILED;
        }
    }

    ngx_http_redis_ratelimit_decide(r, ctx, outcome);

    return ngx_http_redis_ratelimit_apply(r, ctx);
}


/*
 * The decision answered; one that passed with a delay waits on a timer, as
 * limit_req's does: holding nothing but the timer, not cancelable (an old
 * worker waits for it on reload), a client that closes finalized with 499.
 */

static ngx_int_t
ngx_http_redis_ratelimit_apply(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    if (ctx->wait == 0) {
        ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;
        return ngx_http_redis_ratelimit_answer(r, ctx);
    }

    ctx->state = NGX_HTTP_REDIS_RATELIMIT_DELAYED;

    ctx->delay_timer.handler = ngx_http_redis_ratelimit_delay_end;
    ctx->delay_timer.data = r;
    ctx->delay_timer.log = r->connection->log;

    ngx_add_timer(&ctx->delay_timer, ctx->wait);
    ngx_http_redis_ratelimit_park(r);

    return NGX_AGAIN;
}


static void
ngx_http_redis_ratelimit_delay_end(ngx_event_t *ev)
{
    ngx_http_request_t              *r = ev->data;
    ngx_connection_t                *c;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    c = r->connection;
    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    /* a delay ends in a pass: the handler declines when run again */
    ctx->state = NGX_HTTP_REDIS_RATELIMIT_APPLIED;

    ngx_http_redis_ratelimit_post_resume(r);
    ngx_http_run_posted_requests(c);
}


/* a reference on the main request until ngx_http_redis_ratelimit_resume() */

static void
ngx_http_redis_ratelimit_park(ngx_http_request_t *r)
{
    r->main->count++;
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;
}


/*
 * evaluates keys and costs into the core's request, which writes each
 * limit's Redis key; the call's arguments are laid out only for a request
 * that goes to Redis
 */

static ngx_int_t
ngx_http_redis_ratelimit_prepare(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_loc_conf_t *rlcf,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    char                              *redis_key;
    ngx_str_t                          key, cost;
    ngx_uint_t                         i, n, nkeys;
    rrl_request_t                     *request;
    ngx_http_redis_ratelimit_zone_t   *zone;
    ngx_http_redis_ratelimit_limit_t  *limits, **active;

    limits = rlcf->limits.elts;
    n = rlcf->limits.nelts;

    active = ngx_palloc(r->pool, n * sizeof(ngx_http_redis_ratelimit_limit_t *));
    request = ngx_palloc(r->pool, rrl_request_size(n));

    if (active == NULL || request == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    request = rrl_request_make(request, n);

    /* passed with no cost=$VAR too */
    ngx_str_null(&cost);
    nkeys = 0;

    for (i = 0; i < n; i++) {
        zone = limits[i].zone;

        if (ngx_http_complex_value(r, &zone->key, &key) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (key.len == 0) {
            continue;
        }

        if (limits[i].cost_value
            && ngx_http_complex_value(r, limits[i].cost_value, &cost)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        redis_key = ngx_pnalloc(r->pool, rrl_key_max_len(zone->call.zone_len));

        if (redis_key == NULL
            || rrl_request_add(request, zone, &zone->call, limits[i].cost,
                               limits[i].cost_value ? cost.data : NULL,
                               cost.len, key.data, key.len, limits[i].delay,
                               redis_key)
               != RRL_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        active[nkeys++] = &limits[i];
    }

    ctx->nlimits = nkeys;
    ctx->limits = active;
    ctx->request = request;

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_done(void *request, void *data)
{
    ngx_http_request_t              *r = request;
    ngx_http_redis_ratelimit_ctx_t  *ctx = data;

    ngx_connection_t                   *c;
    ngx_http_redis_ratelimit_waiter_t  *w;

    /* the engine's now, not to be detached */
    ctx->call = NULL;

    if (rrl_request_reply(ctx->request)->rc == RRL_OK) {
        /* the turn's wait for the batch included: what the client waited */
        ctx->rtt = ngx_http_redis_ratelimit_clock() - ctx->sent;
        ctx->replied = 1;
    }

    ctx->state = NGX_HTTP_REDIS_RATELIMIT_DECIDED;
    ngx_http_redis_ratelimit_decide(r, ctx, RRL_OUTCOME_REPLY);

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
        /* the client went away with the reply in flight: it is dropped */
        rrl_engine_detach(ctx->call);
        ngx_http_redis_ratelimit_lease_learn(ctx, RRL_LEASE_CALL_FAILED);
    }

    if (ctx->delay_timer.timer_set) {
        /* the request ended during its delay (the client went away) */
        ngx_del_timer(&ctx->delay_timer);
    }
}

