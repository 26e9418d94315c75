
/*
 * settle=VALUE: in the log phase of a request whose estimate was charged in
 * Redis or in a lease, each limit's actual cost against it, settled in the
 * lease when that is exact, else by a call of its own in the turn's batches
 * (rrl_settle.h) that nobody waits for. The rules are the core's.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"
#include "api/rrl_metrics_count.h"
#include "api/rrl_settle.h"


/* the text of a bad value, at most, in the log */
#define NGX_HTTP_REDIS_RATELIMIT_SETTLE_TEXT  32

/*
 * At most once a second per worker, at warn, on a clock of their own: a
 * Redis outage's messages do not swallow them
 */
#define ngx_http_redis_ratelimit_settle_warn(log, ...)                       \
    if (ngx_time() != ngx_http_redis_ratelimit_settle_logged) {              \
        ngx_http_redis_ratelimit_settle_logged = ngx_time();                 \
        ngx_log_error(NGX_LOG_WARN, log, 0, __VA_ARGS__);                    \
    }


static time_t  ngx_http_redis_ratelimit_settle_logged;


/*
 * No request here: it may have gone. arg: the location's dry_run, then the
 * zones of the limits sent, freed here. A debt is learned as a rejection.
 */

static void
ngx_http_redis_ratelimit_settled(void *arg, const rrl_call_limit_t *limits,
    size_t n, const rrl_limit_result_t *results,
    const rrl_decision_t *decision, int64_t redis_now_us, int64_t sent_us,
    const char *error, size_t error_len)
{
    void                            **confs = arg;

    size_t                            i;
    ngx_str_t                         key;
    ngx_http_redis_ratelimit_zone_t  *zone;

    for (i = 0; i < n; i++) {
        zone = confs[1 + i];

        ngx_http_redis_ratelimit_metrics_count(zone, RRL_METRICS_ZONE_SETTLE,
                                               results ? RRL_SETTLE_SETTLED
                                                       : RRL_SETTLE_FAILED);
        if (results == NULL) {
            ngx_http_redis_ratelimit_settle_warn(ngx_cycle->log,
                              "redis_ratelimit: settlement in zone \"%V\" "
                              "dropped: %*s", &zone->name,
                              error_len ? error_len : sizeof("not made") - 1,
                              error_len ? error : "not made");
            continue;
        }

        /* a debt, with the key Redis knows, as the cache does */
        key.data = results[i].passed ? NULL
                   : ngx_alloc(rrl_key_max_len(zone->name.len),
                               ngx_cycle->log);
        if (key.data == NULL) {
            continue;
        }

        key.len = rrl_key_build((char *) key.data, (char *) zone->name.data,
                                zone->name.len, limits[i].algorithm,
                                limits[i].key, limits[i].key_len);
        ngx_http_redis_ratelimit_deny_keep(zone, (ngx_uint_t) confs[0], &key,
                                           &limits[i], &results[i], sent_us);
        ngx_free(key.data);
    }

    ngx_free(confs);
}


ngx_int_t
ngx_http_redis_ratelimit_settle_handler(ngx_http_request_t *r)
{
    size_t                                 n;
    ngx_int_t                              rc;
    ngx_str_t                              key, text;
    ngx_uint_t                             i;
    void                                 **confs;
    rrl_call_limit_t                      *send, *call;
    ngx_http_redis_ratelimit_shm_t        *shm;
    ngx_http_redis_ratelimit_ctx_t        *ctx;
    ngx_http_redis_ratelimit_limit_t      *limit;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);
    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    /* once per main request, its client gone too (499), with a limit */
    if (r != r->main || ctx == NULL || ctx->settled || ctx->nlimits == 0) {
        return NGX_OK;
    }

    ctx->settled = 1;

    send = ngx_palloc(r->pool, ctx->nlimits * sizeof(rrl_call_limit_t));
    confs = ngx_alloc((1 + ctx->nlimits) * sizeof(void *), r->connection->log);

    if (send == NULL || confs == NULL) {
        ngx_free(confs);
        return NGX_OK;
    }

    confs[0] = (void *) ctx->conf->dry_run;

    for (i = 0, n = 0; i < ctx->nlimits; i++) {
        limit = ctx->limits[i];

        if (limit->settle == NULL) {
            continue;
        }

        if (ngx_http_complex_value(r, limit->settle, &text) != NGX_OK) {
            ngx_str_null(&text);
        }

        call = rrl_request_limit(ctx->request, i);

        rc = rrl_settle_plan(ctx->status, ctx->leased,
                             rrl_request_redis_now(ctx->request),
                             &limit->zone->call, call, text.data, text.len,
                             &send[n]);

        /* a lease's units first (rrl_lease_settle()) */
        if (rc == RRL_SETTLE_SEND && limit->zone->lease) {
            key.data = (u_char *) call->redis_key;
            key.len = call->redis_key_len;
            shm = rmcf->lease_zone->data;

            ngx_http_redis_ratelimit_shm_lock(shm);

            sn = ngx_http_redis_ratelimit_shm_lookup(shm, &key);
            if (sn && rrl_lease_settle((rrl_lease_entry_t *) sn->entry,
                                       &send[n],
                                       ngx_http_redis_ratelimit_clock()))
            {
                rc = RRL_SETTLE_SETTLED;
            }

            ngx_http_redis_ratelimit_shm_unlock(shm);
        }

        if (rc == RRL_SETTLE_FAILED) {
            ngx_http_redis_ratelimit_settle_warn(r->connection->log,
                "redis_ratelimit: settle=%V of zone \"%V\" is \"%*s\": %s, "
                "the estimate %uL stays charged", &limit->settle->value,
                &limit->zone->name,
                ngx_min(text.len, NGX_HTTP_REDIS_RATELIMIT_SETTLE_TEXT),
                text.data, rrl_settle_why(text.data, text.len), call->cost);
        }

        if (rc == RRL_SETTLE_SEND) {
            confs[1 + n++] = limit->zone;

        } else {
            ngx_http_redis_ratelimit_metrics_count(limit->zone,
                                                   RRL_METRICS_ZONE_SETTLE,
                                                   (int) rc);
        }
    }

    if (n == 0) {
        ngx_free(confs);
        return NGX_OK;
    }

    (void) rrl_settle(ngx_http_redis_ratelimit_engine(),
                      (char *) rmcf->script_sha1.data, rmcf->script_sha1.len,
                      send, (const void *const *) &confs[1], n,
                      ngx_http_redis_ratelimit_clock(),
                      ngx_http_redis_ratelimit_settled, confs);
    return NGX_OK;
}
