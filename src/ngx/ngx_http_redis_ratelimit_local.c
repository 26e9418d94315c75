
/*
 * "redis_ratelimit_fail local": while Redis fails, each nginx decides on
 * its own, in a shared memory zone of its workers. As limit_req's zones:
 * an rbtree of the keys (the script's Redis keys, by their CRC32) with an
 * LRU queue, oldest nodes expired when memory runs out. The algorithms
 * are the core's (rrl_local_check()): the script's arithmetic.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_NAME     "redis_ratelimit_local"
#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_SIZE     "10m"

/* a node's "busy": in use by the request being decided, under the mutex */
#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_FOUND    1
#define NGX_HTTP_REDIS_RATELIMIT_LOCAL_CREATED  2


typedef struct {
    u_char                       color;
    u_char                       busy;
    u_short                      len;
    ngx_queue_t                  queue;
    int64_t                      expire;      /* us: the state is over */
    rrl_local_state_t            state;
    u_char                       data[1];
} ngx_http_redis_ratelimit_local_node_t;


typedef struct {
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  queue;
} ngx_http_redis_ratelimit_local_shctx_t;


typedef struct {
    ngx_http_redis_ratelimit_local_shctx_t  *sh;
    ngx_slab_pool_t             *shpool;

    /* where the size was given first, for the error on another size */
    ngx_str_t                    size;
    u_char                      *file;
    ngx_uint_t                   line;
} ngx_http_redis_ratelimit_local_ctx_t;


static ngx_http_redis_ratelimit_local_node_t *
    ngx_http_redis_ratelimit_local_lookup(
    ngx_http_redis_ratelimit_local_ctx_t *ctx, ngx_str_t *key,
    uint32_t hash);
static ngx_http_redis_ratelimit_local_node_t *
    ngx_http_redis_ratelimit_local_alloc(
    ngx_http_redis_ratelimit_local_ctx_t *ctx, ngx_str_t *key, int64_t now);
static void ngx_http_redis_ratelimit_local_free(
    ngx_http_redis_ratelimit_local_ctx_t *ctx,
    ngx_http_redis_ratelimit_local_node_t *lr);
static void ngx_http_redis_ratelimit_local_expire(
    ngx_http_redis_ratelimit_local_ctx_t *ctx, int64_t now, ngx_uint_t n);
static void ngx_http_redis_ratelimit_local_rbtree_insert_value(
    ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel);
static ngx_int_t ngx_http_redis_ratelimit_local_init_zone(
    ngx_shm_zone_t *shm_zone, void *data);


/* the zones' tag: nginx refuses a name another zone uses */
static ngx_uint_t  ngx_http_redis_ratelimit_local_tag;


ngx_int_t
ngx_http_redis_ratelimit_local_check(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    int64_t                                  now, *v;
    ngx_int_t                                rc;
    ngx_str_t                                key;
    ngx_uint_t                               i, n, passed, limit, burst;
    ngx_time_t                              *tp;
    rrl_local_state_t                       *next;
    rrl_limit_result_t                       result;
    const rrl_local_state_t                 *state;
    ngx_http_redis_ratelimit_zone_t         *zone;
    ngx_http_redis_ratelimit_local_ctx_t    *lctx;
    ngx_http_redis_ratelimit_local_node_t  **nodes, *lr;

    static rrl_local_state_t  empty;

    n = ctx->nlimits;
    lctx = ctx->conf->local_zone->data;

    nodes = ngx_pcalloc(r->pool,
                  n * sizeof(ngx_http_redis_ratelimit_local_node_t *));
    next = ngx_palloc(r->pool, n * sizeof(rrl_local_state_t));

    if (nodes == NULL || next == NULL) {
        return NGX_ERROR;
    }

    /* this server's own clock: there is no Redis TIME */
    tp = ngx_timeofday();
    now = (int64_t) tp->sec * 1000000 + (int64_t) tp->msec * 1000;

    passed = 1;
    rc = NGX_OK;

    ngx_shmtx_lock(&lctx->shpool->mutex);

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

        state = &empty;

        lr = ngx_http_redis_ratelimit_local_lookup(lctx, &key,
                                          ngx_crc32_short(key.data, key.len));
        if (lr) {
            /* the most recently used, and not expired while in use */
            lr->busy = NGX_HTTP_REDIS_RATELIMIT_LOCAL_FOUND;
            ngx_queue_remove(&lr->queue);
            ngx_queue_insert_head(&lctx->sh->queue, &lr->queue);

            if (lr->expire > now) {
                state = &lr->state;
            }
        }

        nodes[i] = lr;

        zone = ctx->limits[i]->zone;
        ngx_http_redis_ratelimit_local_limits(zone, ctx->conf->local_share,
                                              &limit, &burst);

        if (rrl_local_check(zone->algorithm, limit, zone->period, burst,
                            ctx->costs[i], now, state, &next[i], &result)
            != RRL_OK)
        {
            rc = NGX_ERROR;
            goto done;
        }

        v = &ctx->result.values[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i];
        v[0] = result.passed;
        v[1] = result.remaining;
        v[2] = result.reset_after_us;
        v[3] = result.retry_after_us;

        passed = passed && result.passed;
    }

    if (passed) {

        /* every node first: when memory runs out, no state is written */

        for (i = 0; i < n; i++) {
            if (nodes[i]) {
                continue;
            }

            key.data = (u_char *) ctx->argv[3 + i];
            key.len = ctx->argvlen[3 + i];

            nodes[i] = ngx_http_redis_ratelimit_local_alloc(lctx, &key, now);
            if (nodes[i] == NULL) {
                rc = NGX_ERROR;
                goto done;
            }
        }

        for (i = 0; i < n; i++) {
            v = &ctx->result.values[RRL_REPLY_HEADER
                                    + RRL_REPLY_PER_LIMIT * i];

            /* a pass's reset time is how long the state matters */
            nodes[i]->state = next[i];
            nodes[i]->expire = now + v[2];
        }
    }

    ctx->result.values[0] = passed;
    ctx->result.values[1] = now;
    ctx->result.nvalues = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n;

done:

    for (i = 0; i < n; i++) {
        lr = nodes[i];

        if (lr == NULL) {
            continue;
        }

        if (rc != NGX_OK && lr->busy == NGX_HTTP_REDIS_RATELIMIT_LOCAL_CREATED)
        {
            ngx_http_redis_ratelimit_local_free(lctx, lr);
            continue;
        }

        lr->busy = 0;
    }

    ngx_shmtx_unlock(&lctx->shpool->mutex);

    return rc;
}


/*
 * local_share=1/K: each of K servers allows its share, at least one
 * request per period; a token bucket keeps at least one token.
 */

void
ngx_http_redis_ratelimit_local_limits(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t share, ngx_uint_t *limit, ngx_uint_t *burst)
{
    *limit = ngx_max(zone->limit / share, 1);
    *burst = zone->burst / share;

    if (zone->algorithm == RRL_TOKEN_BUCKET && *burst == 0) {
        *burst = 1;
    }
}


ngx_uint_t
ngx_http_redis_ratelimit_local_capacity(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_uint_t share)
{
    ngx_uint_t  limit, burst;

    ngx_http_redis_ratelimit_local_limits(zone, share, &limit, &burst);

    return (ngx_uint_t) rrl_capacity(zone->algorithm, limit, burst);
}


static ngx_http_redis_ratelimit_local_node_t *
ngx_http_redis_ratelimit_local_lookup(ngx_http_redis_ratelimit_local_ctx_t *ctx,
    ngx_str_t *key, uint32_t hash)
{
    ngx_int_t                               rc;
    ngx_rbtree_node_t                      *node, *sentinel;
    ngx_http_redis_ratelimit_local_node_t  *lr;

    node = ctx->sh->rbtree.root;
    sentinel = ctx->sh->rbtree.sentinel;

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

        lr = (ngx_http_redis_ratelimit_local_node_t *) &node->color;

        rc = ngx_memn2cmp(key->data, lr->data, key->len, (size_t) lr->len);

        if (rc == 0) {
            return lr;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static ngx_http_redis_ratelimit_local_node_t *
ngx_http_redis_ratelimit_local_alloc(ngx_http_redis_ratelimit_local_ctx_t *ctx,
    ngx_str_t *key, int64_t now)
{
    size_t                                  size;
    ngx_rbtree_node_t                      *node;
    ngx_http_redis_ratelimit_local_node_t  *lr;

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_redis_ratelimit_local_node_t, data)
           + key->len;

    ngx_http_redis_ratelimit_local_expire(ctx, now, 1);

    node = ngx_slab_alloc_locked(ctx->shpool, size);

    if (node == NULL) {
        ngx_http_redis_ratelimit_local_expire(ctx, now, 0);

        node = ngx_slab_alloc_locked(ctx->shpool, size);
        if (node == NULL) {
            ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                          "could not allocate node%s", ctx->shpool->log_ctx);
            return NULL;
        }
    }

    node->key = ngx_crc32_short(key->data, key->len);

    lr = (ngx_http_redis_ratelimit_local_node_t *) &node->color;

    lr->busy = NGX_HTTP_REDIS_RATELIMIT_LOCAL_CREATED;
    lr->len = (u_short) key->len;
    lr->expire = 0;
    ngx_memzero(&lr->state, sizeof(rrl_local_state_t));
    ngx_memcpy(lr->data, key->data, key->len);

    ngx_rbtree_insert(&ctx->sh->rbtree, node);
    ngx_queue_insert_head(&ctx->sh->queue, &lr->queue);

    return lr;
}


static void
ngx_http_redis_ratelimit_local_free(ngx_http_redis_ratelimit_local_ctx_t *ctx,
    ngx_http_redis_ratelimit_local_node_t *lr)
{
    ngx_rbtree_node_t  *node;

    node = (ngx_rbtree_node_t *)
               ((u_char *) lr - offsetof(ngx_rbtree_node_t, color));

    ngx_queue_remove(&lr->queue);
    ngx_rbtree_delete(&ctx->sh->rbtree, node);
    ngx_slab_free_locked(ctx->shpool, node);
}


/*
 * As limit_req's: n == 1 deletes one or two nodes whose state is over,
 * n == 0 the oldest node by force and then one or two such nodes. Nodes in
 * use by the request being decided are never deleted.
 */

static void
ngx_http_redis_ratelimit_local_expire(ngx_http_redis_ratelimit_local_ctx_t *ctx,
    int64_t now, ngx_uint_t n)
{
    ngx_queue_t                            *q;
    ngx_http_redis_ratelimit_local_node_t  *lr;

    while (n < 3) {

        if (ngx_queue_empty(&ctx->sh->queue)) {
            return;
        }

        q = ngx_queue_last(&ctx->sh->queue);

        lr = ngx_queue_data(q, ngx_http_redis_ratelimit_local_node_t, queue);

        if (lr->busy) {
            return;
        }

        if (n++ != 0 && lr->expire > now) {
            return;
        }

        ngx_http_redis_ratelimit_local_free(ctx, lr);
    }
}


static void
ngx_http_redis_ratelimit_local_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                     **p;
    ngx_http_redis_ratelimit_local_node_t  *lrn, *lrnt;

    for ( ;; ) {

        if (node->key < temp->key) {

            p = &temp->left;

        } else if (node->key > temp->key) {

            p = &temp->right;

        } else { /* node->key == temp->key */

            lrn = (ngx_http_redis_ratelimit_local_node_t *) &node->color;
            lrnt = (ngx_http_redis_ratelimit_local_node_t *) &temp->color;

            p = (ngx_memn2cmp(lrn->data, lrnt->data, lrn->len, lrnt->len) < 0)
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
    ngx_http_redis_ratelimit_local_ctx_t  *octx = data;

    size_t                                 len;
    ngx_http_redis_ratelimit_local_ctx_t  *ctx;

    ctx = shm_zone->data;

    if (octx) {
        /* a reload: the states are the same whatever the configuration */
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        return NGX_OK;
    }

    ctx->sh = ngx_slab_alloc(ctx->shpool,
                             sizeof(ngx_http_redis_ratelimit_local_shctx_t));
    if (ctx->sh == NULL) {
        return NGX_ERROR;
    }

    ctx->shpool->data = ctx->sh;

    ngx_rbtree_init(&ctx->sh->rbtree, &ctx->sh->sentinel,
                    ngx_http_redis_ratelimit_local_rbtree_insert_value);

    ngx_queue_init(&ctx->sh->queue);

    len = sizeof(" in redis_ratelimit local zone \"\"")
          + shm_zone->shm.name.len;

    ctx->shpool->log_ctx = ngx_slab_alloc(ctx->shpool, len);
    if (ctx->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(ctx->shpool->log_ctx, " in redis_ratelimit local zone \"%V\"%Z",
                &shm_zone->shm.name);

    ctx->shpool->log_nomem = 0;

    return NGX_OK;
}
