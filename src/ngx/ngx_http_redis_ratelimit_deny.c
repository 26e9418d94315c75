
/*
 * "redis_ratelimit_deny_cache": the rejections Redis sends are kept in a
 * shared memory table (ngx_http_redis_ratelimit_shm.c), one entry per Redis
 * key, and answer the key's later requests without Redis until Redis's own
 * end of the rejection. The rules are the core's (rrl_deny_cache.h).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"
#include "api/rrl_deny_cache.h"


#define NGX_HTTP_REDIS_RATELIMIT_DENY_SIZE  (1024 * 1024)

#define ngx_http_redis_ratelimit_deny_entry(sn)                              \
    ((rrl_deny_entry_t *) (sn)->entry)


typedef struct {
    ngx_http_redis_ratelimit_shm_t  shm;
    uint32_t                     redis;       /* rrl_deny_redis_of()'s tag */
} ngx_http_redis_ratelimit_deny_ctx_t;


static ngx_uint_t ngx_http_redis_ratelimit_deny_limit(
    ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_http_redis_ratelimit_zone_t *zone, ngx_uint_t dry_run, uint64_t cost,
    rrl_deny_limit_t *limit);


/* the zone's tag: nginx refuses a name another zone uses */
static ngx_uint_t  ngx_http_redis_ratelimit_deny_tag;


ngx_int_t
ngx_http_redis_ratelimit_deny_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_str_t                               key;
    ngx_uint_t                              i, rejected;
    ngx_time_t                             *tp;
    rrl_call_limit_t                       *call;
    rrl_deny_limit_t                        limit;
    ngx_http_redis_ratelimit_deny_ctx_t    *dctx;
    ngx_http_redis_ratelimit_shm_node_t    *sn;
    ngx_http_redis_ratelimit_main_conf_t   *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    if (rmcf->deny_zone == NULL) {
        return NGX_DECLINED;
    }

    dctx = rmcf->deny_zone->data;
    rejected = 0;

    ngx_http_redis_ratelimit_shm_lock(&dctx->shm);

    for (i = 0; i < ctx->nlimits; i++) {
        call = rrl_request_limit(ctx->request, i);

        key.data = (u_char *) call->redis_key;
        key.len = call->redis_key_len;

        sn = ngx_http_redis_ratelimit_deny_limit(rmcf, ctx->limits[i]->zone,
                                                 ctx->conf->dry_run,
                                                 call->cost, &limit)
             ? ngx_http_redis_ratelimit_shm_lookup(&dctx->shm, &key) : NULL;

        switch (rrl_deny_answer(sn ? ngx_http_redis_ratelimit_deny_entry(sn)
                                   : NULL,
                                &limit, ctx->sent,
                                rrl_request_result(ctx->request, i)))
        {
        case RRL_DENY_REJECTED:
            ngx_http_redis_ratelimit_shm_touch(&dctx->shm, sn);
            rrl_deny_shown(ngx_http_redis_ratelimit_deny_entry(sn), call);
            rejected++;
            break;

        case RRL_DENY_ENDED:
            ngx_http_redis_ratelimit_shm_free(&dctx->shm, sn);
            break;
        }
    }

    ngx_http_redis_ratelimit_shm_unlock(&dctx->shm);

    if (rejected == 0) {
        return NGX_DECLINED;
    }

    /* for X-RateLimit-Reset, where Redis sends its TIME */
    tp = ngx_timeofday();

    rrl_request_decide_at(ctx->request,
                          (int64_t) tp->sec * 1000000
                          + (int64_t) tp->msec * 1000);

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_deny_learn(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_str_t          key;
    ngx_uint_t         i;
    rrl_call_limit_t  *call;

    for (i = 0; i < ctx->nlimits; i++) {
        call = rrl_request_limit(ctx->request, i);

        key.data = (u_char *) call->redis_key;
        key.len = call->redis_key_len;

        ngx_http_redis_ratelimit_deny_keep(ctx->limits[i]->zone,
                                           ctx->conf->dry_run, &key, call,
                                           rrl_request_result(ctx->request, i),
                                           ctx->sent);
    }
}


void
ngx_http_redis_ratelimit_deny_keep(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t dry_run, ngx_str_t *key, const rrl_call_limit_t *call,
    const rrl_limit_result_t *result, int64_t sent)
{
    int64_t                                now;
    rrl_deny_entry_t                       entry;
    rrl_deny_limit_t                       limit;
    ngx_http_redis_ratelimit_deny_ctx_t   *dctx;
    ngx_http_redis_ratelimit_shm_node_t   *sn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_redis_ratelimit_module);
    now = ngx_http_redis_ratelimit_clock();

    if (rmcf->deny_zone == NULL || result->passed
        || !ngx_http_redis_ratelimit_deny_limit(rmcf, zone, dry_run,
                                                call->cost, &limit)
        || !rrl_deny_learn(sent, now, &limit, result, &entry))
    {
        return;
    }

    rrl_deny_keep_shown(&entry, call);

    dctx = rmcf->deny_zone->data;

    ngx_http_redis_ratelimit_shm_lock(&dctx->shm);

    sn = ngx_http_redis_ratelimit_shm_get(&dctx->shm, key, now, 1);

    /* the latest rejection: every one ends no later than Redis's */
    if (sn) {
        *ngx_http_redis_ratelimit_deny_entry(sn) = entry;
    }

    ngx_http_redis_ratelimit_shm_unlock(&dctx->shm);
}


/* a limit of the zone, as the cache knows it; 0: not cached */

static ngx_uint_t
ngx_http_redis_ratelimit_deny_limit(ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_http_redis_ratelimit_zone_t *zone, ngx_uint_t dry_run, uint64_t cost,
    rrl_deny_limit_t *limit)
{
    ngx_http_redis_ratelimit_deny_ctx_t  *dctx;

    dctx = rmcf->deny_zone->data;

    *limit = rrl_deny_limit(zone->call.algorithm, zone->call.limit,
                            zone->call.period_ms, zone->call.burst, dctx->redis,
                            cost);

    return rrl_deny_usable(dry_run, rmcf->engine.mode == RRL_SERVER_CLUSTER,
                           zone->combined);
}


ngx_int_t
ngx_http_redis_ratelimit_deny_init_conf(ngx_conf_t *cf,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    ngx_str_t                             name;
    ngx_shm_zone_t                       *shm_zone;
    ngx_http_redis_ratelimit_deny_ctx_t  *dctx;

    ngx_conf_init_uint_value(rmcf->deny_size,
                             NGX_HTTP_REDIS_RATELIMIT_DENY_SIZE);

    if (rmcf->deny_size == 0 || rmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    ngx_str_set(&name, RRL_CONF_DENY_ZONE);

    /* a reload keeps the entries: those of changed zones do not apply */
    shm_zone = ngx_http_redis_ratelimit_shm_add(cf, &name, rmcf->deny_size,
                                   &ngx_http_redis_ratelimit_deny_tag,
                                   sizeof(ngx_http_redis_ratelimit_deny_ctx_t),
                                   sizeof(rrl_deny_entry_t),
                                   offsetof(rrl_deny_entry_t, until_us),
                                   "deny cache");
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    dctx = shm_zone->data;

    /* which Redis: a reload to another must not apply the old one's */
    dctx->redis = rrl_deny_redis_of(&rmcf->engine, rmcf->addrs.elts,
                                    rmcf->addrs.nelts);

    rmcf->deny_zone = shm_zone;

    return NGX_OK;
}
