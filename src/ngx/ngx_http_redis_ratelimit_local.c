
/*
 * "redis_ratelimit_fail local": while Redis fails, each nginx decides on
 * its own, in a shared memory table of its workers
 * (ngx_http_redis_ratelimit_shm.c), one entry per Redis key of the script.
 * The rules are the core's (rrl_local_zone.h): the script's arithmetic.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"
#include "api/rrl_local_zone.h"


#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_SIZE     (10 * 1024 * 1024)


typedef struct {
    ngx_http_redis_ratelimit_shm_t  shm;

    /* where the size was given first, for the error on another size */
    ngx_str_t                    size;
    u_char                      *file;
    ngx_uint_t                   line;
} ngx_http_redis_ratelimit_local_ctx_t;


/* the zones' tag: nginx refuses a name another zone uses */
static ngx_uint_t  ngx_http_redis_ratelimit_local_tag;


ngx_int_t
ngx_http_redis_ratelimit_local_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    int64_t                                 now;
    ngx_int_t                               rc;
    ngx_str_t                               key;
    ngx_uint_t                              i, n;
    ngx_time_t                             *tp;
    rrl_call_limit_t                       *call;
    rrl_local_limit_t                      *limits;
    rrl_engine_result_t                    *reply;
    rrl_local_entry_t                      *next;
    ngx_http_redis_ratelimit_local_ctx_t   *lctx;
    ngx_http_redis_ratelimit_shm_node_t   **nodes;

    n = ctx->nlimits;
    lctx = ctx->conf->local_zone->data;
    reply = rrl_request_reply(ctx->request);

    nodes = ngx_pcalloc(r->pool, n * sizeof(void *));
    limits = ngx_palloc(r->pool, n * sizeof(rrl_local_limit_t));
    next = ngx_palloc(r->pool, n * sizeof(rrl_local_entry_t));

    if (nodes == NULL || limits == NULL || next == NULL) {
        return NGX_ERROR;
    }

    /* this server's own clock: there is no Redis TIME */
    tp = ngx_timeofday();
    now = (int64_t) tp->sec * 1000000 + (int64_t) tp->msec * 1000;

    rc = NGX_OK;

    ngx_http_redis_ratelimit_shm_lock(&lctx->shm);

    for (i = 0; i < n; i++) {
        call = rrl_request_limit(ctx->request, i);

        key.data = (u_char *) call->redis_key;
        key.len = call->redis_key_len;

        if (key.len > 0xffff) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "redis_ratelimit: key of %uz bytes too long "
                          "for a local zone", key.len);
            rc = NGX_ERROR;
            goto done;
        }

        limits[i] = rrl_local_limit(&ctx->limits[i]->zone->call, call->cost);

        nodes[i] = ngx_http_redis_ratelimit_shm_get(&lctx->shm, &key, now, 0);

        if (nodes[i]) {
            /* not dropped to make room for another key of the request */
            nodes[i]->busy = NGX_HTTP_REDIS_RATELIMIT_SHM_FOUND;
            limits[i].entry = (rrl_local_entry_t *) nodes[i]->entry;
        }
    }

    reply->nvalues = rrl_local_zone_decide(limits, n, ctx->conf->local_share,
                                           now, next, reply->values);
    if (reply->nvalues == 0) {
        rc = NGX_ERROR;
        goto done;
    }

    if (!reply->values[0]) {
        goto done;
    }

    /* every node first: when memory runs out, no state is written */

    for (i = 0; i < n; i++) {
        if (nodes[i]) {
            continue;
        }

        call = rrl_request_limit(ctx->request, i);

        key.data = (u_char *) call->redis_key;
        key.len = call->redis_key_len;

        nodes[i] = ngx_http_redis_ratelimit_shm_alloc(&lctx->shm, &key, now);
        if (nodes[i] == NULL) {
            ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                          "could not allocate node%s",
                          lctx->shm.shpool->log_ctx);
            rc = NGX_ERROR;
            goto done;
        }

        nodes[i]->busy = NGX_HTTP_REDIS_RATELIMIT_SHM_NEW;
    }

    for (i = 0; i < n; i++) {
        *(rrl_local_entry_t *) nodes[i]->entry = next[i];
    }

done:

    ngx_http_redis_ratelimit_shm_release(&lctx->shm, nodes, n, rc != NGX_OK);
    ngx_http_redis_ratelimit_shm_unlock(&lctx->shm);

    return rc;
}


/* the zone of "local_zone=NAME:SIZE", or the default one: fc is checked */

char *
ngx_http_redis_ratelimit_local_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    rrl_fail_conf_t *fc, ngx_shm_zone_t **zone)
{
    ngx_str_t                              name, word;
    ngx_shm_zone_t                        *shm_zone;
    ngx_http_redis_ratelimit_local_ctx_t  *ctx;

    ngx_http_redis_ratelimit_str(&name, &fc->zone_name);

    /* a reload keeps the states: they are the same whatever the zones */
    shm_zone = ngx_http_redis_ratelimit_shm_add(cf, &name, 0,
                                  &ngx_http_redis_ratelimit_local_tag,
                                  sizeof(ngx_http_redis_ratelimit_local_ctx_t),
                                  sizeof(rrl_local_entry_t),
                                  offsetof(rrl_local_entry_t, end_us),
                                  "local zone");
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx = shm_zone->data;

    if (fc->zone_size == 0) {
        /* the default zone: its size, unless a local_zone= gives one */
        if (shm_zone->shm.size == 0) {
            shm_zone->shm.size = NGX_HTTP_REDIS_RATELIMIT_LOCAL_SIZE;
        }

    } else if (ctx->file == NULL) {
        shm_zone->shm.size = fc->zone_size;
        ngx_http_redis_ratelimit_str(&ctx->size, &fc->zone_size_word);
        ctx->file = cf->conf_file->file.name.data;
        ctx->line = cf->conf_file->line;

    } else if (shm_zone->shm.size != fc->zone_size) {
        ngx_http_redis_ratelimit_str(&word, &fc->zone_word);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive, "
                           "local_zone \"%V\" has size %V in %s:%ui",
                           &word, &cmd->name, &name, &ctx->size,
                           ctx->file, ctx->line);
        return NGX_CONF_ERROR;
    }

    *zone = shm_zone;

    return NGX_CONF_OK;
}
