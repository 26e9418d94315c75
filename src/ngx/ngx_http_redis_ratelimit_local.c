
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
#include "rrl_local_zone.h"


#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_NAME     "redis_ratelimit_local"
#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_SIZE     "10m"


typedef struct {
    ngx_http_redis_ratelimit_shm_t  shm;

    /* where the size was given first, for the error on another size */
    ngx_str_t                    size;
    u_char                      *file;
    ngx_uint_t                   line;
} ngx_http_redis_ratelimit_local_ctx_t;


static ngx_int_t ngx_http_redis_ratelimit_local_init_zone(
    ngx_shm_zone_t *shm_zone, void *data);


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
    rrl_local_limit_t                      *limits;
    rrl_local_entry_t                      *next;
    ngx_http_redis_ratelimit_zone_t        *zone;
    ngx_http_redis_ratelimit_local_ctx_t   *lctx;
    ngx_http_redis_ratelimit_shm_node_t   **nodes;

    n = ctx->nlimits;
    lctx = ctx->conf->local_zone->data;

    nodes = ngx_pcalloc(r->pool,
                        n * sizeof(ngx_http_redis_ratelimit_shm_node_t *));
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
        key.data = (u_char *) ctx->argv[3 + i];
        key.len = ctx->argvlen[3 + i];

        if (key.len > 0xffff) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "redis_ratelimit: key of %uz bytes too long "
                          "for a local zone", key.len);
            rc = NGX_ERROR;
            goto done;
        }

        zone = ctx->limits[i]->zone;

        limits[i].algorithm = zone->algorithm;
        limits[i].limit = zone->limit;
        limits[i].period_ms = zone->period;
        limits[i].burst = zone->burst;
        limits[i].cost = ctx->costs[i];
        limits[i].entry = NULL;

        nodes[i] = ngx_http_redis_ratelimit_shm_get(&lctx->shm, &key, now, 0);

        if (nodes[i]) {
            /* not dropped to make room for another key of the request */
            nodes[i]->busy = NGX_HTTP_REDIS_RATELIMIT_SHM_FOUND;
            limits[i].entry = (rrl_local_entry_t *) nodes[i]->entry;
        }
    }

    ctx->result.nvalues = rrl_local_zone_decide(limits, n,
                                                ctx->conf->local_share, now,
                                                next, ctx->result.values);
    if (ctx->result.nvalues == 0) {
        rc = NGX_ERROR;
        goto done;
    }

    if (!ctx->result.values[0]) {
        goto done;
    }

    /* every node first: when memory runs out, no state is written */

    for (i = 0; i < n; i++) {
        if (nodes[i]) {
            continue;
        }

        key.data = (u_char *) ctx->argv[3 + i];
        key.len = ctx->argvlen[3 + i];

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


void
ngx_http_redis_ratelimit_local_limits(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t share, ngx_uint_t *limit, ngx_uint_t *burst)
{
    uint64_t  l, b;

    rrl_local_share(zone->algorithm, zone->limit, zone->burst, share, &l, &b);

    *limit = (ngx_uint_t) l;
    *burst = (ngx_uint_t) b;
}


ngx_uint_t
ngx_http_redis_ratelimit_local_capacity(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t share)
{
    return (ngx_uint_t) rrl_local_capacity(zone->algorithm, zone->limit,
                                           zone->burst, share);
}


char *
ngx_http_redis_ratelimit_local_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_str_t *value, ngx_shm_zone_t **zone)
{
    u_char                                *p;
    ssize_t                                size;
    ngx_str_t                              name, s;
    ngx_shm_zone_t                        *shm_zone;
    ngx_http_redis_ratelimit_local_ctx_t  *ctx;

    size = 0;
    ngx_str_null(&s);

    if (value == NULL) {
        /* sized in ngx_http_redis_ratelimit_local_init_conf() */
        ngx_str_set(&name, NGX_HTTP_REDIS_RATELIMIT_LOCAL_NAME);

    } else {
        name.data = value->data + sizeof("local_zone=") - 1;
        name.len = value->len - (sizeof("local_zone=") - 1);

        p = ngx_strlchr(name.data, name.data + name.len, ':');

        if (p == NULL || p == name.data) {
            goto invalid;
        }

        s.data = p + 1;
        s.len = name.data + name.len - s.data;
        name.len = p - name.data;

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR) {
            goto invalid;
        }

        if (size < (ssize_t) (8 * ngx_pagesize)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\" in \"%V\" directive, "
                               "local_zone must be at least %uzk",
                               value, &cmd->name, 8 * ngx_pagesize / 1024);
            return NGX_CONF_ERROR;
        }
    }

    if ((name.len == sizeof(NGX_HTTP_REDIS_RATELIMIT_METRICS_NAME) - 1
         && ngx_strncmp(name.data, NGX_HTTP_REDIS_RATELIMIT_METRICS_NAME,
                        name.len) == 0)
        || (name.len == sizeof(NGX_HTTP_REDIS_RATELIMIT_DENY_NAME) - 1
            && ngx_strncmp(name.data, NGX_HTTP_REDIS_RATELIMIT_DENY_NAME,
                           name.len) == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive, "
                           "zone \"%V\" is the module's own", value,
                           &cmd->name, &name);
        return NGX_CONF_ERROR;
    }

    /* a tag of its own: nginx refuses a name another zone uses */
    shm_zone = ngx_shared_memory_add(cf, &name, 0,
                                     &ngx_http_redis_ratelimit_local_tag);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx = shm_zone->data;

    if (ctx == NULL) {
        ctx = ngx_pcalloc(cf->pool,
                          sizeof(ngx_http_redis_ratelimit_local_ctx_t));
        if (ctx == NULL) {
            return NGX_CONF_ERROR;
        }

        shm_zone->init = ngx_http_redis_ratelimit_local_init_zone;
        shm_zone->data = ctx;
    }

    if (size) {
        if (shm_zone->shm.size == 0) {
            shm_zone->shm.size = size;
            ctx->size = s;
            ctx->file = cf->conf_file->file.name.data;
            ctx->line = cf->conf_file->line;

        } else if (shm_zone->shm.size != (size_t) size) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\" in \"%V\" directive, "
                               "local_zone \"%V\" has size %V in %s:%ui",
                               value, &cmd->name, &name, &ctx->size,
                               ctx->file, ctx->line);
            return NGX_CONF_ERROR;
        }
    }

    *zone = shm_zone;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid value \"%V\" in \"%V\" directive, "
                       "it must be local_zone=NAME:SIZE",
                       value, &cmd->name);

    return NGX_CONF_ERROR;
}


void
ngx_http_redis_ratelimit_local_init_conf(ngx_conf_t *cf)
{
    ngx_str_t                              size;
    ngx_uint_t                             i;
    ngx_list_part_t                       *part;
    ngx_shm_zone_t                        *shm_zone;
    ngx_http_redis_ratelimit_local_ctx_t  *ctx;

    ngx_str_set(&size, NGX_HTTP_REDIS_RATELIMIT_LOCAL_SIZE);

    part = &cf->cycle->shared_memory.part;
    shm_zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            shm_zone = part->elts;
            i = 0;
        }

        if (shm_zone[i].tag != &ngx_http_redis_ratelimit_local_tag
            || shm_zone[i].shm.size != 0)
        {
            continue;
        }

        ctx = shm_zone[i].data;

        shm_zone[i].shm.size = ngx_parse_size(&size);
        ctx->size = size;
    }
}


static ngx_int_t
ngx_http_redis_ratelimit_local_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_redis_ratelimit_local_ctx_t  *ctx;

    ctx = shm_zone->data;

    /* a reload keeps the states: they are the same whatever the zones */
    ctx->shm.size = sizeof(rrl_local_entry_t);
    ctx->shm.end = offsetof(rrl_local_entry_t, end_us);
    ctx->shm.what = "local zone";

    return ngx_http_redis_ratelimit_shm_init_zone(shm_zone, data);
}
