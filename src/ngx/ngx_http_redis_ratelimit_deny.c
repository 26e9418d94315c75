
/*
 * "redis_ratelimit_deny_cache": the rejections Redis sends are kept in a
 * shared memory zone of this nginx, one entry per Redis key, and answer
 * the key's later requests without Redis until Redis's own end of the
 * rejection (the arithmetic is the core's: rrl_deny_learn() and
 * rrl_deny_applies()). As limit_req's zones: an rbtree of the keys (by
 * their CRC32) with an LRU queue, ended and oldest entries dropped when
 * memory runs out; an entry that still does not fit is not kept.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_DENY_SIZE  (1024 * 1024)


typedef struct {
    u_char                       color;
    u_char                       dummy;
    u_short                      len;
    ngx_queue_t                  queue;
    rrl_deny_entry_t             entry;
    u_char                       data[1];
} ngx_http_redis_ratelimit_deny_node_t;


typedef struct {
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  queue;
} ngx_http_redis_ratelimit_deny_shctx_t;


typedef struct {
    ngx_http_redis_ratelimit_deny_shctx_t  *sh;
    ngx_slab_pool_t             *shpool;
    uint32_t                     redis;       /* the server's configuration */
} ngx_http_redis_ratelimit_deny_ctx_t;


static ngx_uint_t ngx_http_redis_ratelimit_deny_usable(
    ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_http_redis_ratelimit_zone_t *zone);
static void ngx_http_redis_ratelimit_deny_limit(
    ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_uint_t i,
    rrl_deny_limit_t *limit);
static ngx_http_redis_ratelimit_deny_node_t *
    ngx_http_redis_ratelimit_deny_lookup(
    ngx_http_redis_ratelimit_deny_ctx_t *dctx, ngx_str_t *key, uint32_t hash);
static ngx_http_redis_ratelimit_deny_node_t *
    ngx_http_redis_ratelimit_deny_alloc(
    ngx_http_redis_ratelimit_deny_ctx_t *dctx, ngx_str_t *key, uint32_t hash,
    int64_t now);
static void ngx_http_redis_ratelimit_deny_free(
    ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_http_redis_ratelimit_deny_node_t *dn);
static void ngx_http_redis_ratelimit_deny_expire(
    ngx_http_redis_ratelimit_deny_ctx_t *dctx, int64_t now, ngx_uint_t n);
static void ngx_http_redis_ratelimit_deny_rbtree_insert_value(
    ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel);
static uint32_t ngx_http_redis_ratelimit_deny_redis(
    ngx_http_redis_ratelimit_main_conf_t *rmcf);
static ngx_int_t ngx_http_redis_ratelimit_deny_init_zone(
    ngx_shm_zone_t *shm_zone, void *data);


/* the zone's tag: nginx refuses a name another zone uses */
static ngx_uint_t  ngx_http_redis_ratelimit_deny_tag;


ngx_int_t
ngx_http_redis_ratelimit_deny_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    int64_t                                *v;
    ngx_str_t                               key;
    ngx_uint_t                              i, rejected;
    ngx_time_t                             *tp;
    rrl_deny_limit_t                        limit;
    ngx_http_redis_ratelimit_zone_t        *zone;
    ngx_http_redis_ratelimit_deny_ctx_t    *dctx;
    ngx_http_redis_ratelimit_deny_node_t   *dn;
    ngx_http_redis_ratelimit_main_conf_t   *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    if (rmcf->deny_zone == NULL || ctx->conf->dry_run) {
        return NGX_DECLINED;
    }

    dctx = rmcf->deny_zone->data;
    rejected = 0;

    ngx_shmtx_lock(&dctx->shpool->mutex);

    for (i = 0; i < ctx->nlimits; i++) {
        zone = ctx->limits[i]->zone;
        v = &ctx->result.values[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i];

        key.data = (u_char *) ctx->argv[3 + i];
        key.len = ctx->argvlen[3 + i];

        dn = NULL;

        if (ngx_http_redis_ratelimit_deny_usable(rmcf, zone)) {
            dn = ngx_http_redis_ratelimit_deny_lookup(dctx, &key,
                                         ngx_crc32_short(key.data, key.len));
        }

        if (dn && dn->entry.until_us <= ctx->sent) {
            ngx_http_redis_ratelimit_deny_free(dctx, dn);
            dn = NULL;
        }

        if (dn) {
            ngx_http_redis_ratelimit_deny_limit(dctx, ctx, i, &limit);

            if (rrl_deny_applies(&dn->entry, &limit, ctx->sent, v)) {
                ngx_queue_remove(&dn->queue);
                ngx_queue_insert_head(&dctx->sh->queue, &dn->queue);
                rejected++;
                continue;
            }
        }

        /* not consulted: shown as an idle key, as Redis would not be */
        v[0] = 1;
        v[1] = (int64_t) zone->capacity;
        v[2] = 0;
        v[3] = 0;
    }

    ngx_shmtx_unlock(&dctx->shpool->mutex);

    if (rejected == 0) {
        return NGX_DECLINED;
    }

    /* for X-RateLimit-Reset, where Redis sends its TIME */
    tp = ngx_timeofday();

    ctx->result.values[0] = 0;
    ctx->result.values[1] = (int64_t) tp->sec * 1000000
                            + (int64_t) tp->msec * 1000;
    ctx->result.nvalues = RRL_REPLY_HEADER
                          + RRL_REPLY_PER_LIMIT * ctx->nlimits;

    if (rrl_reply_decode(ctx->result.values, ctx->result.nvalues,
                         ctx->nlimits, ctx->limit_results, &ctx->decision)
        != RRL_OK)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_deny_learn(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    int64_t                                now;
    uint32_t                               hash;
    ngx_str_t                              key;
    ngx_uint_t                             i;
    rrl_deny_entry_t                       entry;
    rrl_deny_limit_t                       limit;
    ngx_http_redis_ratelimit_deny_ctx_t   *dctx;
    ngx_http_redis_ratelimit_deny_node_t  *dn;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    if (rmcf->deny_zone == NULL || ctx->conf->dry_run) {
        return;
    }

    dctx = rmcf->deny_zone->data;
    now = ngx_http_redis_ratelimit_clock();

    for (i = 0; i < ctx->nlimits; i++) {

        if (ctx->limit_results[i].passed
            || !ngx_http_redis_ratelimit_deny_usable(rmcf,
                                                     ctx->limits[i]->zone))
        {
            continue;
        }

        ngx_http_redis_ratelimit_deny_limit(dctx, ctx, i, &limit);

        if (!rrl_deny_learn(ctx->sent, now, &limit, &ctx->limit_results[i],
                            &entry))
        {
            continue;
        }

        key.data = (u_char *) ctx->argv[3 + i];
        key.len = ctx->argvlen[3 + i];

        if (key.len > 0xffff) {
            continue;
        }

        hash = ngx_crc32_short(key.data, key.len);

        ngx_shmtx_lock(&dctx->shpool->mutex);

        dn = ngx_http_redis_ratelimit_deny_lookup(dctx, &key, hash);

        if (dn) {
            ngx_queue_remove(&dn->queue);
            ngx_queue_insert_head(&dctx->sh->queue, &dn->queue);

        } else {
            dn = ngx_http_redis_ratelimit_deny_alloc(dctx, &key, hash, now);
        }

        /* the latest rejection: every one ends no later than Redis's */
        if (dn) {
            dn->entry = entry;
        }

        ngx_shmtx_unlock(&dctx->shpool->mutex);
    }
}


/*
 * In a cluster, a request of several limits reserves in each slot's call
 * and releases the reservations when another slot rejects: a rejection
 * may have seen a reservation given back a round trip later.
 */

static ngx_uint_t
ngx_http_redis_ratelimit_deny_usable(
    ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_http_redis_ratelimit_zone_t *zone)
{
    return !(zone->combined
             && rmcf->mode == NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER);
}


static void
ngx_http_redis_ratelimit_deny_limit(ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_uint_t i, rrl_deny_limit_t *limit)
{
    ngx_http_redis_ratelimit_zone_t  *zone;

    zone = ctx->limits[i]->zone;

    ngx_memzero(limit, sizeof(rrl_deny_limit_t));

    limit->algorithm = (int) zone->algorithm;
    limit->limit = zone->limit;
    limit->period_ms = zone->period;
    limit->burst = zone->burst;
    limit->redis = dctx->redis;
    limit->cost = ctx->costs[i];
}


static ngx_http_redis_ratelimit_deny_node_t *
ngx_http_redis_ratelimit_deny_lookup(ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_str_t *key, uint32_t hash)
{
    ngx_int_t                              rc;
    ngx_rbtree_node_t                     *node, *sentinel;
    ngx_http_redis_ratelimit_deny_node_t  *dn;

    node = dctx->sh->rbtree.root;
    sentinel = dctx->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        /* hash == node->key */

        dn = (ngx_http_redis_ratelimit_deny_node_t *) &node->color;

        rc = ngx_memn2cmp(key->data, dn->data, key->len, (size_t) dn->len);

        if (rc == 0) {
            return dn;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static ngx_http_redis_ratelimit_deny_node_t *
ngx_http_redis_ratelimit_deny_alloc(ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_str_t *key, uint32_t hash, int64_t now)
{
    size_t                                 size;
    ngx_rbtree_node_t                     *node;
    ngx_http_redis_ratelimit_deny_node_t  *dn;

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_redis_ratelimit_deny_node_t, data)
           + key->len;

    ngx_http_redis_ratelimit_deny_expire(dctx, now, 1);

    node = ngx_slab_alloc_locked(dctx->shpool, size);

    if (node == NULL) {
        ngx_http_redis_ratelimit_deny_expire(dctx, now, 0);

        node = ngx_slab_alloc_locked(dctx->shpool, size);
        if (node == NULL) {
            /* not kept: Redis answers the key's next request */
            return NULL;
        }
    }

    node->key = hash;

    dn = (ngx_http_redis_ratelimit_deny_node_t *) &node->color;

    dn->len = (u_short) key->len;
    ngx_memcpy(dn->data, key->data, key->len);

    ngx_rbtree_insert(&dctx->sh->rbtree, node);
    ngx_queue_insert_head(&dctx->sh->queue, &dn->queue);

    return dn;
}


static void
ngx_http_redis_ratelimit_deny_free(ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    ngx_http_redis_ratelimit_deny_node_t *dn)
{
    ngx_rbtree_node_t  *node;

    node = (ngx_rbtree_node_t *)
               ((u_char *) dn - offsetof(ngx_rbtree_node_t, color));

    ngx_queue_remove(&dn->queue);
    ngx_rbtree_delete(&dctx->sh->rbtree, node);
    ngx_slab_free_locked(dctx->shpool, node);
}


/*
 * As limit_req's: n == 1 deletes one or two entries that have ended,
 * n == 0 the oldest entry by force and then one or two that have ended.
 */

static void
ngx_http_redis_ratelimit_deny_expire(ngx_http_redis_ratelimit_deny_ctx_t *dctx,
    int64_t now, ngx_uint_t n)
{
    ngx_queue_t                           *q;
    ngx_http_redis_ratelimit_deny_node_t  *dn;

    while (n < 3) {

        if (ngx_queue_empty(&dctx->sh->queue)) {
            return;
        }

        q = ngx_queue_last(&dctx->sh->queue);

        dn = ngx_queue_data(q, ngx_http_redis_ratelimit_deny_node_t, queue);

        if (n++ != 0 && dn->entry.until_us > now) {
            return;
        }

        ngx_http_redis_ratelimit_deny_free(dctx, dn);
    }
}


static void
ngx_http_redis_ratelimit_deny_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                    **p;
    ngx_http_redis_ratelimit_deny_node_t  *dn, *dnt;

    for ( ;; ) {

        if (node->key < temp->key) {

            p = &temp->left;

        } else if (node->key > temp->key) {

            p = &temp->right;

        } else { /* node->key == temp->key */

            dn = (ngx_http_redis_ratelimit_deny_node_t *) &node->color;
            dnt = (ngx_http_redis_ratelimit_deny_node_t *) &temp->color;

            p = (ngx_memn2cmp(dn->data, dnt->data, dn->len, dnt->len) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/* off | SIZE */

char *
ngx_http_redis_ratelimit_deny_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    ssize_t     size;
    ngx_str_t  *value;

    if (rmcf->deny_size != NGX_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        rmcf->deny_size = 0;
        return NGX_CONF_OK;
    }

    size = ngx_parse_size(&value[1]);

    /* at least 8 pages, as limit_req's zones */
    if (size == NGX_ERROR || size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive, "
                           "it must be \"off\" or a size of at least %uzk",
                           &value[1], &cmd->name, 8 * ngx_pagesize / 1024);
        return NGX_CONF_ERROR;
    }

    rmcf->deny_size = size;

    return NGX_CONF_OK;
}


ngx_int_t
ngx_http_redis_ratelimit_deny_init_conf(ngx_conf_t *cf,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    ngx_str_t                             name;
    ngx_shm_zone_t                       *shm_zone;
    ngx_http_redis_ratelimit_deny_ctx_t  *dctx;

    ngx_conf_init_size_value(rmcf->deny_size,
                             NGX_HTTP_REDIS_RATELIMIT_DENY_SIZE);

    if (rmcf->deny_size == 0 || rmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    ngx_str_set(&name, NGX_HTTP_REDIS_RATELIMIT_DENY_NAME);

    shm_zone = ngx_shared_memory_add(cf, &name, rmcf->deny_size,
                                     &ngx_http_redis_ratelimit_deny_tag);
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    dctx = ngx_pcalloc(cf->pool, sizeof(ngx_http_redis_ratelimit_deny_ctx_t));
    if (dctx == NULL) {
        return NGX_ERROR;
    }

    dctx->redis = ngx_http_redis_ratelimit_deny_redis(rmcf);

    shm_zone->init = ngx_http_redis_ratelimit_deny_init_zone;
    shm_zone->data = dctx;

    rmcf->deny_zone = shm_zone;

    return NGX_OK;
}


/*
 * Which Redis the rejections came from: a reload that points the module
 * at another Redis (or database) must not apply the old one's.
 */

static uint32_t
ngx_http_redis_ratelimit_deny_redis(ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    uint32_t                          crc;
    ngx_uint_t                        i;
    ngx_http_redis_ratelimit_addr_t  *addr;

    ngx_crc32_init(crc);

    ngx_crc32_update(&crc, (u_char *) &rmcf->mode, sizeof(rmcf->mode));
    ngx_crc32_update(&crc, (u_char *) &rmcf->db, sizeof(rmcf->db));
    ngx_crc32_update(&crc, rmcf->sentinel_name.data,
                     rmcf->sentinel_name.len);

    addr = rmcf->addrs.elts;

    for (i = 0; i < rmcf->addrs.nelts; i++) {
        /* with its length: "a" "bc" is not "ab" "c" */
        ngx_crc32_update(&crc, (u_char *) &addr[i].name.len,
                         sizeof(addr[i].name.len));
        ngx_crc32_update(&crc, addr[i].name.data, addr[i].name.len);
    }

    ngx_crc32_final(crc);

    return crc;
}


static ngx_int_t
ngx_http_redis_ratelimit_deny_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_redis_ratelimit_deny_ctx_t  *octx = data;

    size_t                                len;
    ngx_http_redis_ratelimit_deny_ctx_t  *dctx;

    dctx = shm_zone->data;

    if (octx) {
        /* a reload of the same size: entries of changed zones do not apply */
        dctx->sh = octx->sh;
        dctx->shpool = octx->shpool;
        return NGX_OK;
    }

    dctx->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        dctx->sh = dctx->shpool->data;
        return NGX_OK;
    }

    dctx->sh = ngx_slab_alloc(dctx->shpool,
                              sizeof(ngx_http_redis_ratelimit_deny_shctx_t));
    if (dctx->sh == NULL) {
        return NGX_ERROR;
    }

    dctx->shpool->data = dctx->sh;

    ngx_rbtree_init(&dctx->sh->rbtree, &dctx->sh->sentinel,
                    ngx_http_redis_ratelimit_deny_rbtree_insert_value);

    ngx_queue_init(&dctx->sh->queue);

    len = sizeof(" in redis_ratelimit deny cache \"\"")
          + shm_zone->shm.name.len;

    dctx->shpool->log_ctx = ngx_slab_alloc(dctx->shpool, len);
    if (dctx->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(dctx->shpool->log_ctx,
                " in redis_ratelimit deny cache \"%V\"%Z",
                &shm_zone->shm.name);

    /* a full zone keeps no entry: not worth a log line */
    dctx->shpool->log_nomem = 0;

    return NGX_OK;
}
