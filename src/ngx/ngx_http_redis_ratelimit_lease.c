
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
#include "rrl_lease_call.h"
#include "rrl_metrics_count.h"
#include "rrl_settle.h"


static void ngx_http_redis_ratelimit_lease_learned(void *arg, const char *key,
    size_t key_len, const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int64_t redis_now, int64_t sent);


/* ask: when not decided, what each lease limit wants of Redis */

ngx_int_t
ngx_http_redis_ratelimit_lease_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_uint_t ask)
{
    int64_t                                now;
    uint64_t                              *renew;
    ngx_int_t                              rc;
    ngx_str_t                              key;
    ngx_uint_t                             i;
    ngx_time_t                            *tp;
    rrl_lease_entry_t                    **entries;
    ngx_http_redis_ratelimit_shm_t        *shm;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    if (rmcf->lease_zone == NULL) {
        return NGX_DECLINED;
    }

    entries = ngx_pcalloc(r->pool, ctx->nlimits * sizeof(void *));
    renew = ngx_palloc(r->pool, ctx->nlimits * sizeof(uint64_t));

    if (entries == NULL || renew == NULL) {
        return NGX_ERROR;
    }

    shm = rmcf->lease_zone->data;
    now = ngx_http_redis_ratelimit_clock();
    tp = ngx_timeofday();

    ngx_http_redis_ratelimit_shm_lock(shm);

    for (i = 0; i < ctx->nlimits; i++) {
        key.data = (u_char *) ctx->argv[RRL_CALL_KEY(i)];
        key.len = ctx->argvlen[RRL_CALL_KEY(i)];

        sn = ctx->call_limits[i].lease
             ? ngx_http_redis_ratelimit_shm_get(shm, &key, now, 0) : NULL;
        entries[i] = sn ? (rrl_lease_entry_t *) sn->entry : NULL;
    }

    rc = rrl_lease_call_check(ctx->call_limits, entries, ctx->nlimits, ask,
                              now,
                              (int64_t) tp->sec * 1000000 + tp->msec * 1000,
                              (int64_t) (rmcf->timeout + 1000) * 1000,
                              ctx->result.values, renew);

    ngx_http_redis_ratelimit_shm_unlock(shm);

    for (i = 0; rc != RRL_LEASE_NONE && i < ctx->nlimits; i++) {
        if (!ctx->call_limits[i].lease) {
            continue;
        }

        if ((rc == RRL_LEASE_DECIDED && ask) || ctx->call_limits[i].lease_back) {
            ngx_http_redis_ratelimit_metrics_count(ctx->limits[i]->zone,
                                    RRL_METRICS_ZONE_LEASES,
                                    (rc == RRL_LEASE_DECIDED)
                                    ? RRL_LEASE_EVENTS + RRL_LEASE_FROM_LEASE
                                    : RRL_LEASE_GIVEN_BACK);
        }

        if (renew[i]) {
            (void) rrl_lease_renew(ngx_http_redis_ratelimit_engine(),
                                   (char *) rmcf->script_sha1.data,
                                   rmcf->script_sha1.len,
                                   &ctx->call_limits[i], renew[i],
                                   ctx->limits[i]->zone, now,
                                   ngx_http_redis_ratelimit_lease_learned,
                                   ctx->limits[i]->zone);
        }
    }

    if (rc == RRL_LEASE_DECIDED) {
        ctx->leased = 1;
        ctx->result.rc = RRL_OK;
        ctx->result.nvalues = rrl_reply_values(ctx->call_limits, ctx->nlimits);
        return NGX_OK;
    }

    /* the arguments again, with what the lease limits want */
    if (rc == RRL_LEASE_ASK
        && rrl_call_args(ctx->args, ctx->args_size,
                         (char *) rmcf->script_sha1.data,
                         rmcf->script_sha1.len, ctx->call_limits,
                         ctx->nlimits, ctx->argv, ctx->argvlen)
           != RRL_OK)
    {
        return NGX_ERROR;
    }

    return NGX_DECLINED;
}


/*
 * Redis's decoded reply to the request: its lease limits' grants. NGX_OK:
 * refused, then decided from the units that grants to this server's other
 * requests brought meanwhile (ctx->result holds the leases' reply).
 */

ngx_int_t
ngx_http_redis_ratelimit_lease_learn(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_uint_t  i;

    for (i = 0; i < ctx->nlimits; i++) {
        if (!ctx->call_limits[i].lease) {
            continue;
        }

        ngx_http_redis_ratelimit_metrics_count(ctx->limits[i]->zone,
                                    RRL_METRICS_ZONE_LEASES,
                                    RRL_LEASE_EVENTS + RRL_LEASE_FROM_REDIS);

        /* all or nothing: Redis took no grant of a request it rejected */
        if (ctx->decision.passed || !ctx->limit_results[i].passed) {
            ngx_http_redis_ratelimit_lease_learned(ctx->limits[i]->zone,
                                                   ctx->argv[RRL_CALL_KEY(i)],
                                                   ctx->argvlen[RRL_CALL_KEY(i)],
                                                   &ctx->call_limits[i],
                                                   &ctx->limit_results[i],
                                                   ctx->result.values[1],
                                                   ctx->sent);
        }
    }

    return ctx->decision.passed ? NGX_DECLINED
                                : ngx_http_redis_ratelimit_lease_check(r, ctx, 0);
}


/* an answer for a lease limit (result NULL: the call failed) into its entry */

static void
ngx_http_redis_ratelimit_lease_learned(void *arg, const char *key,
    size_t key_len, const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int64_t redis_now, int64_t sent)
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
                                          result && result->passed);
    event = sn ? rrl_lease_call_learn(limit, result,
                                      (rrl_lease_entry_t *) sn->entry,
                                      redis_now, sent, now)
               : -1;

    ngx_http_redis_ratelimit_shm_unlock(shm);

    if (event >= 0) {
        ngx_http_redis_ratelimit_metrics_count(arg, RRL_METRICS_ZONE_LEASES,
                                               event);
    }
}


/* settle=: a limit decided from the lease of key, settled there if exact */

ngx_uint_t
ngx_http_redis_ratelimit_lease_settle(ngx_str_t *key,
    const rrl_call_limit_t *limit)
{
    int64_t                                now;
    ngx_uint_t                             settled;
    ngx_http_redis_ratelimit_shm_t        *shm;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    /* a request decided from leases: there is a table */
    rmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_redis_ratelimit_module);
    shm = rmcf->lease_zone->data;
    now = ngx_http_redis_ratelimit_clock();

    ngx_http_redis_ratelimit_shm_lock(shm);

    sn = ngx_http_redis_ratelimit_shm_lookup(shm, key);
    settled = sn && rrl_lease_settle((rrl_lease_entry_t *) sn->entry, limit,
                                     now);

    ngx_http_redis_ratelimit_shm_unlock(shm);

    return settled;
}
