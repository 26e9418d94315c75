
/*
 * A node: an ngx_rbtree_node_t up to its color, then the rest of an
 * ngx_http_redis_ratelimit_shm_node_t: the entry, then the key.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_shm.h"


#define ngx_http_redis_ratelimit_shm_node(node)                              \
    ((ngx_http_redis_ratelimit_shm_node_t *) &(node)->color)
#define ngx_http_redis_ratelimit_shm_key(sn)                                 \
    ((u_char *) (sn)->entry + (sn)->size)


static ngx_int_t ngx_http_redis_ratelimit_shm_cmp(uint32_t hash, u_char *key,
    size_t len, ngx_rbtree_node_t *node);
static void ngx_http_redis_ratelimit_shm_expire(
    ngx_http_redis_ratelimit_shm_t *shm, int64_t now, ngx_uint_t n);
static void ngx_http_redis_ratelimit_shm_rbtree_insert_value(
    ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel);


static ngx_int_t
ngx_http_redis_ratelimit_shm_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_redis_ratelimit_shm_t  *shm;

    shm = shm_zone->data;
    shm->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    /* a reload's zone of the same size (data: the old one's), or Windows' */
    if (data || shm_zone->shm.exists) {
        shm->sh = shm->shpool->data;
        return NGX_OK;
    }

    if (ngx_http_redis_ratelimit_shm_create(shm, shm->shpool,
                                            &shm_zone->shm.name)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    shm->shpool->data = shm->sh;

    return NGX_OK;
}


ngx_shm_zone_t *
ngx_http_redis_ratelimit_shm_add(ngx_conf_t *cf, ngx_str_t *name, size_t size,
    void *tag, size_t ctx_size, size_t entry_size, size_t end, char *what)
{
    ngx_shm_zone_t                  *shm_zone;
    ngx_http_redis_ratelimit_shm_t  *shm;

    shm_zone = ngx_shared_memory_add(cf, name, size, tag);

    if (shm_zone == NULL || shm_zone->data) {
        return shm_zone;
    }

    shm = ngx_pcalloc(cf->pool, ctx_size);
    if (shm == NULL) {
        return NULL;
    }

    shm->size = entry_size;
    shm->end = end;
    shm->what = what;

    shm_zone->init = ngx_http_redis_ratelimit_shm_init_zone;
    shm_zone->data = shm;

    return shm_zone;
}


ngx_http_redis_ratelimit_shm_node_t *
ngx_http_redis_ratelimit_shm_lookup(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_str_t *key)
{
    uint32_t            hash;
    ngx_int_t           rc;
    ngx_rbtree_node_t  *node, *sentinel;

    hash = ngx_murmur_hash2(key->data, key->len);

    node = shm->sh->rbtree.root;
    sentinel = shm->sh->rbtree.sentinel;

    while (node != sentinel) {
        rc = ngx_http_redis_ratelimit_shm_cmp(hash, key->data, key->len, node);

        if (rc == 0) {
            return ngx_http_redis_ratelimit_shm_node(node);
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


ngx_http_redis_ratelimit_shm_node_t *
ngx_http_redis_ratelimit_shm_alloc(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_str_t *key, int64_t now)
{
    size_t                                size;
    ngx_rbtree_node_t                    *node;
    ngx_http_redis_ratelimit_shm_node_t  *sn;

    if (key->len > 0xffff) {
        return NULL;
    }

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_redis_ratelimit_shm_node_t, entry)
           + shm->size + key->len;

    ngx_http_redis_ratelimit_shm_expire(shm, now, 1);

    node = ngx_slab_alloc_locked(shm->shpool, size);

    if (node == NULL) {
        ngx_http_redis_ratelimit_shm_expire(shm, now, 0);

        node = ngx_slab_alloc_locked(shm->shpool, size);
        if (node == NULL) {
            return NULL;
        }
    }

    node->key = ngx_murmur_hash2(key->data, key->len);

    sn = ngx_http_redis_ratelimit_shm_node(node);

    sn->busy = 0;
    sn->len = (u_short) key->len;
    sn->size = (u_short) shm->size;
    ngx_memzero(sn->entry, shm->size);
    ngx_memcpy(ngx_http_redis_ratelimit_shm_key(sn), key->data, key->len);

    ngx_rbtree_insert(&shm->sh->rbtree, node);
    ngx_queue_insert_head(&shm->sh->queue, &sn->queue);

    return sn;
}


ngx_http_redis_ratelimit_shm_node_t *
ngx_http_redis_ratelimit_shm_get(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_str_t *key, int64_t now, ngx_uint_t create)
{
    ngx_http_redis_ratelimit_shm_node_t  *sn;

    sn = ngx_http_redis_ratelimit_shm_lookup(shm, key);

    if (sn) {
        ngx_http_redis_ratelimit_shm_touch(shm, sn);
        return sn;
    }

    return create ? ngx_http_redis_ratelimit_shm_alloc(shm, key, now) : NULL;
}


void
ngx_http_redis_ratelimit_shm_free(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_http_redis_ratelimit_shm_node_t *sn)
{
    ngx_rbtree_node_t  *node;

    node = (ngx_rbtree_node_t *)
               ((u_char *) sn - offsetof(ngx_rbtree_node_t, color));

    ngx_queue_remove(&sn->queue);
    ngx_rbtree_delete(&shm->sh->rbtree, node);
    ngx_slab_free_locked(shm->shpool, node);
}


void
ngx_http_redis_ratelimit_shm_release(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_http_redis_ratelimit_shm_node_t **nodes, ngx_uint_t n,
    ngx_uint_t undo)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (nodes[i] == NULL) {
            continue;
        }

        if (undo && nodes[i]->busy == NGX_HTTP_REDIS_RATELIMIT_SHM_NEW) {
            ngx_http_redis_ratelimit_shm_free(shm, nodes[i]);
            continue;
        }

        nodes[i]->busy = 0;
    }
}


/* the order of the rbtree: by hash, then by key */

static ngx_int_t
ngx_http_redis_ratelimit_shm_cmp(uint32_t hash, u_char *key, size_t len,
    ngx_rbtree_node_t *node)
{
    ngx_http_redis_ratelimit_shm_node_t  *sn;

    if (hash != node->key) {
        return (hash < node->key) ? -1 : 1;
    }

    sn = ngx_http_redis_ratelimit_shm_node(node);

    return ngx_memn2cmp(key, ngx_http_redis_ratelimit_shm_key(sn), len,
                        (size_t) sn->len);
}


/*
 * As limit_req's: n == 1 deletes one or two ended entries, n == 0 the
 * oldest by force and then one or two ended ones; never one in use.
 */

static void
ngx_http_redis_ratelimit_shm_expire(ngx_http_redis_ratelimit_shm_t *shm,
    int64_t now, ngx_uint_t n)
{
    ngx_queue_t                          *q;
    ngx_http_redis_ratelimit_shm_node_t  *sn;

    while (n < 3) {
        if (ngx_queue_empty(&shm->sh->queue)) {
            return;
        }

        q = ngx_queue_last(&shm->sh->queue);

        sn = ngx_queue_data(q, ngx_http_redis_ratelimit_shm_node_t, queue);

        if (sn->busy
            || (n++ != 0
                && *(int64_t *) ((u_char *) sn->entry + shm->end) > now))
        {
            return;
        }

        ngx_http_redis_ratelimit_shm_free(shm, sn);
    }
}


static void
ngx_http_redis_ratelimit_shm_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                    **p;
    ngx_http_redis_ratelimit_shm_node_t   *sn;

    sn = ngx_http_redis_ratelimit_shm_node(node);

    for ( ;; ) {
        p = (ngx_http_redis_ratelimit_shm_cmp((uint32_t) node->key,
                                      ngx_http_redis_ratelimit_shm_key(sn),
                                      sn->len, temp) < 0)
            ? &temp->left : &temp->right;

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


ngx_int_t
ngx_http_redis_ratelimit_shm_create(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_slab_pool_t *shpool, ngx_str_t *name)
{
    size_t  len;

    shm->shpool = shpool;

    shm->sh = ngx_slab_alloc(shpool,
                             sizeof(ngx_http_redis_ratelimit_shm_sh_t));
    if (shm->sh == NULL) {
        return NGX_ERROR;
    }

    ngx_rbtree_init(&shm->sh->rbtree, &shm->sh->sentinel,
                    ngx_http_redis_ratelimit_shm_rbtree_insert_value);

    ngx_queue_init(&shm->sh->queue);

    len = sizeof(" in redis_ratelimit  \"\"") + ngx_strlen(shm->what)
          + name->len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in redis_ratelimit %s \"%V\"%Z",
                shm->what, name);

    /* no log of a full zone: its caller's, if any */
    shpool->log_nomem = 0;

    return NGX_OK;
}
