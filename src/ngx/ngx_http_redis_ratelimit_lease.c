
/*
 * Leases ("lease=P%"): units this server takes from a key's state in Redis
 * ahead of its requests, kept in a shared memory table of its workers
 * (ngx_http_redis_ratelimit_shm.c), one entry per Redis key. The rules,
 * and the renewals' calls, are the core's (rrl_lease_call.h).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"
#include "api/rrl_lease_call.h"
#include "api/rrl_metrics_count.h"


static void ngx_http_redis_ratelimit_lease_learned(void *arg, const char *key,
    size_t key_len, const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int how, int64_t redis_now,
    int64_t sent);


/* ask: not decided here, what each lease limit wants of Redis's call */

ngx_int_t
ngx_http_redis_ratelimit_lease_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_uint_t ask, int64_t now)
{
    uint64_t                               renew;
    ngx_int_t                              rc;
    ngx_str_t                              key;
    ngx_uint_t                             i;
    ngx_time_t                            *tp;
    rrl_call_limit_t                      *call;
    ngx_http_redis_ratelimit_shm_t        *shm;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    /* no lease limit: nothing to look up, no lock */
    if (rmcf->lease_zone == NULL || !rrl_request_has_lease(ctx->request)) {
        return NGX_DECLINED;
    }

    shm = rmcf->lease_zone->data;
    tp = ngx_timeofday();

    ngx_http_redis_ratelimit_shm_lock(shm);

    for (i = 0; i < ctx->nlimits; i++) {
        call = rrl_request_limit(ctx->request, i);

        key.data = (u_char *) call->redis_key;
        key.len = call->redis_key_len;

        sn = call->lease ? ngx_http_redis_ratelimit_shm_get(shm, &key, now, ask)
                         : NULL;
        rrl_request_lease_entry(ctx->request, i,
                                sn ? (rrl_lease_entry_t *) sn->entry : NULL);
    }

    rc = rrl_lease_call_check(ctx->request, ask, now,
                              (int64_t) tp->sec * 1000000 + tp->msec * 1000,
                              (int64_t) (rmcf->timeout + 1000) * 1000);

    ngx_http_redis_ratelimit_shm_unlock(shm);

    if (rc != RRL_LEASE_DECIDED) {
        /* what the lease limits want goes into the call's arguments */
        return NGX_DECLINED;
    }

    for (i = 0; i < ctx->nlimits; i++) {
        renew = rrl_request_renewal(ctx->request, i);

        if (renew) {
            (void) rrl_lease_renew(ngx_http_redis_ratelimit_engine(),
                                   (char *) rmcf->script_sha1.data,
                                   rmcf->script_sha1.len,
                                   rrl_request_limit(ctx->request, i), renew,
                                   ctx->limits[i]->zone, now,
                                   ngx_http_redis_ratelimit_lease_learned,
                                   ctx->limits[i]->zone);
        }
    }

    ctx->leased = 1;

    return NGX_OK;
}


/*
 * The end of the request's call (RRL_LEASE_CALL_*; PASSED: answered) for
 * its lease limits, once on every path. NGX_OK: refused, then decided from
 * the units that grants to this server's other requests brought meanwhile.
 */

ngx_int_t
ngx_http_redis_ratelimit_lease_learn(ngx_http_redis_ratelimit_ctx_t *ctx,
    int how)
{
    ngx_uint_t         i;
    rrl_call_limit_t  *call;

    /* Redis's answer: all or nothing, as the request was decided */
    how = (how == RRL_LEASE_CALL_PASSED
           && !rrl_request_decision(ctx->request)->passed)
          ? RRL_LEASE_CALL_REJECTED : how;

    for (i = 0; i < ctx->nlimits; i++) {
        call = rrl_request_limit(ctx->request, i);

        if (call->lease) {
            ngx_http_redis_ratelimit_lease_learned(ctx->limits[i]->zone,
                call->redis_key, call->redis_key_len, call,
                rrl_request_result(ctx->request, i), how,
                rrl_request_redis_now(ctx->request), ctx->sent);
        }
    }

    return (how == RRL_LEASE_CALL_REJECTED)
           ? ngx_http_redis_ratelimit_lease_check(ctx->owner, ctx, 0,
                                           ngx_http_redis_ratelimit_clock())
           : NGX_DECLINED;
}


/* the end of a call for a lease limit (rrl_lease_call_learn()) */

static void
ngx_http_redis_ratelimit_lease_learned(void *arg, const char *key,
    size_t key_len, const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int how, int64_t redis_now,
    int64_t sent)
{
    int                                    event;
    int64_t                                now;
    ngx_str_t                              name;
    ngx_http_redis_ratelimit_shm_t        *shm;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_redis_ratelimit_module);
    shm = rmcf->lease_zone->data;
    now = ngx_http_redis_ratelimit_clock();

    name.data = (u_char *) key;
    name.len = key_len;

    ngx_http_redis_ratelimit_shm_lock(shm);

    sn = ngx_http_redis_ratelimit_shm_get(shm, &name, now,
                                          how == RRL_LEASE_CALL_PASSED);
    event = sn ? rrl_lease_call_learn(limit, result, how,
                                      (rrl_lease_entry_t *) sn->entry,
                                      redis_now, sent, now)
               : -1;

    ngx_http_redis_ratelimit_shm_unlock(shm);

    /* a call answered gave back what it carried */
    ngx_http_redis_ratelimit_metrics_count(arg, RRL_METRICS_ZONE_LEASES,
                                           (how >= RRL_LEASE_CALL_REJECTED
                                            && limit->lease_back)
                                           ? RRL_LEASE_GIVEN_BACK : -1);
    ngx_http_redis_ratelimit_metrics_count(arg, RRL_METRICS_ZONE_LEASES, event);
}

