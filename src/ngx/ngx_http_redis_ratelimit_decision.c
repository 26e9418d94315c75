
/*
 * The core's verdict applied to a request: its status and response, the
 * rejection's log line, the deny cache, the metrics, and the problem+json
 * body of a rejection; and what the request shows, for the core to write.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static ngx_int_t ngx_http_redis_ratelimit_outcome(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);
static void ngx_http_redis_ratelimit_log_rejection(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_int_t outcome);
static ngx_int_t ngx_http_redis_ratelimit_send_problem(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);


/* what a request whose keys could not be evaluated shows: no decision */
static rrl_decision_t  ngx_http_redis_ratelimit_undecided;


/*
 * what the call brought: a reply that the core decoded, or a failure; or
 * the leases' decision, made already
 */

static ngx_int_t
ngx_http_redis_ratelimit_outcome(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    size_t                                 len;
    u_char                                 msg[NGX_MAX_ERROR_STR];
    rrl_engine_result_t                   *result;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    if (ctx->leased) {
        return RRL_OUTCOME_REPLY;
    }

    result = rrl_request_reply(ctx->request);

    if (result->rc != RRL_OK) {
        rmcf = ngx_http_get_module_main_conf(r,
                                             ngx_http_redis_ratelimit_module);

        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: request to %*s failed: "
                                     "%*s",
                                     result->node ? result->node_len
                                                  : rmcf->server.len,
                                     result->node ? (u_char *) result->node
                                                  : rmcf->server.data,
                                     result->error_len, result->error);
    }

    if (result->rc != RRL_OK || rrl_request_decode(ctx->request) != RRL_OK)
    {
        /* the core has logged what was wrong with a reply */
        ngx_http_redis_ratelimit_lease_learn(ctx, RRL_LEASE_CALL_FAILED);
        return RRL_OUTCOME_FAILED;
    }

    /* Redis's own reply: refused, then decided anew from the leases */
    if (ctx->replied
        && ngx_http_redis_ratelimit_lease_learn(ctx, RRL_LEASE_CALL_PASSED)
           == NGX_OK)
    {
        return RRL_OUTCOME_REPLY;
    }

    /* an invalid override: the zone's rate applied; the first one logged */
    len = rrl_request_override_message(ctx->request, (char *) msg,
                                       sizeof(msg));

    if (len && len <= sizeof(msg)) {
        ngx_http_redis_ratelimit_log_failure(r->connection->log, "%*s", len,
                                             msg);
    }

    return RRL_OUTCOME_REPLY;
}


/*
 * Applies the core's verdict on the outcome. fail local: the decision of
 * this server's shared memory zone, in the shape of the script's reply, so
 * that it is decoded, logged and sent in headers as one from Redis.
 */

void
ngx_http_redis_ratelimit_decide(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_int_t outcome)
{
    uint64_t                              share;
    rrl_verdict_t                         v;
    rrl_settings_t                        s;
    ngx_http_redis_ratelimit_loc_conf_t  *rlcf;

    rlcf = ctx->conf;

    if (outcome == RRL_OUTCOME_REPLY) {
        outcome = ngx_http_redis_ratelimit_outcome(r, ctx);
    }

    s.fail = rlcf->fail;
    s.dry_run = rlcf->dry_run;
    s.status_code = rlcf->status_code;
    s.problem_json = rlcf->problem_json;
    s.headers = rlcf->headers;
    s.local_share = rlcf->local_share;

    ngx_memzero(&v, sizeof(rrl_verdict_t));

    /* the delay of a local decision is on this server's share */
    for (share = 1; /* void */; share = rlcf->local_share) {
        ctx->delay = rrl_request_delay(ctx->request, share);

        if (rrl_decide(&s, outcome, rrl_request_decision(ctx->request)->passed,
                       ctx->delay, &v)
            != RRL_OK || !v.ask_local)
        {
            break;
        }

        outcome = (ngx_http_redis_ratelimit_local_check(r, ctx) == NGX_OK
                   && rrl_request_decode_local(ctx->request) == RRL_OK)
                  ? RRL_OUTCOME_LOCAL : RRL_OUTCOME_LOCAL_FAILED;
    }

    ctx->status = v.status;
    ctx->rc = v.code ? (ngx_int_t) v.code : NGX_DECLINED;
    ctx->decided = v.decided;
    ctx->problem = v.problem;
    ctx->show = v.show;
    ctx->delay = v.delay_us;
    ctx->wait = (ngx_msec_t) v.wait_ms;

    if (v.log) {
        ngx_http_redis_ratelimit_log_rejection(r, ctx, outcome);
    }

    if (v.learn) {
        ngx_http_redis_ratelimit_deny_learn(r, ctx);
    }

    ngx_http_redis_ratelimit_metrics_request(ctx);
}


/* the message, of the limit the headers report, names an override itself */

static void
ngx_http_redis_ratelimit_log_rejection(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_int_t outcome)
{
    u_char                           *p;
    size_t                            len;
    rrl_call_limit_t                 *limit;
    const rrl_decision_t             *decision;
    ngx_http_redis_ratelimit_zone_t  *zone;

    if (r->connection->log->log_level < ctx->conf->log_level) {
        return;
    }

    decision = rrl_request_decision(ctx->request);
    zone = ctx->limits[decision->reported]->zone;
    limit = rrl_request_limit(ctx->request, decision->reported);

    /* its length first, then the message */

    len = rrl_rejection_message(NULL, 0, ctx->conf->dry_run, outcome, limit,
                                (char *) zone->rate.data, zone->rate.len,
                                decision->retry_after);

    p = ngx_pnalloc(r->pool, len);
    if (len == 0 || p == NULL) {
        return;
    }

    (void) rrl_rejection_message((char *) p, len, ctx->conf->dry_run, outcome,
                                 limit, (char *) zone->rate.data,
                                 zone->rate.len, decision->retry_after);

    ngx_log_error(ctx->conf->log_level, r->connection->log, 0, "%*s",
                  len, p);
}


/*
 * The handler's answer once decided: with problem_json, a rejection by the
 * limits is sent here, so that no error_page replaces its body.
 */

ngx_int_t
ngx_http_redis_ratelimit_answer(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    if (!ctx->problem) {
        return ctx->rc;
    }

    ngx_http_finalize_request(r, ngx_http_redis_ratelimit_send_problem(r, ctx));

    return NGX_DONE;
}


static ngx_int_t
ngx_http_redis_ratelimit_send_problem(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    size_t        len;
    ngx_int_t     rc;
    ngx_str_t     type;
    ngx_buf_t    *b;
    rrl_shown_t   shown;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ngx_http_redis_ratelimit_shown(ctx, &shown);

    len = rrl_shown_problem(NULL, 0, (unsigned) ctx->rc, &shown);

    b = ngx_create_temp_buf(r->pool, len);
    if (len == 0 || b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last += rrl_shown_problem((char *) b->pos, len, (unsigned) ctx->rc,
                                 &shown);

    ngx_str_set(&type, "application/problem+json");

    return ngx_http_redis_ratelimit_send_body(r, ctx->rc, &type, b);
}


void
ngx_http_redis_ratelimit_shown(ngx_http_redis_ratelimit_ctx_t *ctx,
    rrl_shown_t *shown)
{
    ngx_memzero(shown, sizeof(rrl_shown_t));
    shown->decision = &ngx_http_redis_ratelimit_undecided;

    if (ctx->request) {
        rrl_request_show(ctx->request, shown);
    }

    shown->status = ctx->status;
    shown->decided = ctx->decided;
    shown->show = ctx->show;
    shown->local_share = ctx->conf->local_share;
    shown->replied = ctx->replied;
    shown->rtt_us = ctx->rtt;
    shown->delay_us = ctx->delay;
}
