
/*
 * The module's shared memory tables (the deny cache, the local zones, the
 * leases, the metrics of zones), as limit_req's zones: entries of one size
 * by key, in an rbtree of the keys' MurmurHash2 (four bytes a step: they
 * are long Redis keys) and an LRU queue; when memory runs out, ended entries
 * and then the oldest not busy are dropped. All but init_zone, create locked.
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_SHM_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_SHM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


typedef struct {
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  queue;
} ngx_http_redis_ratelimit_shm_sh_t;


/* the first member of the zone's data; its user sets size, end and what */
typedef struct {
    ngx_http_redis_ratelimit_shm_sh_t  *sh;
    ngx_slab_pool_t             *shpool;
    size_t                       size;        /* of an entry */
    size_t                       end;         /* offset of its int64_t end */
    char                        *what;        /* in the slab's messages */
} ngx_http_redis_ratelimit_shm_t;


typedef struct {
    u_char                       color;
    u_char                       busy;        /* in use: never dropped */
    u_short                      len;         /* of the key */
    u_short                      size;        /* of the entry, the key next */
    ngx_queue_t                  queue;
    int64_t                      entry[1];
} ngx_http_redis_ratelimit_shm_node_t;


/* a node's "busy": in use by the request being decided, or for good */
#define NGX_HTTP_REDIS_RATELIMIT_SHM_FOUND  1
#define NGX_HTTP_REDIS_RATELIMIT_SHM_NEW    2


#define ngx_http_redis_ratelimit_shm_lock(shm)                               \
    ngx_shmtx_lock(&(shm)->shpool->mutex)
#define ngx_http_redis_ratelimit_shm_unlock(shm)                             \
    ngx_shmtx_unlock(&(shm)->shpool->mutex)

/* the most recently used */
#define ngx_http_redis_ratelimit_shm_touch(shm, sn)                          \
    ngx_queue_remove(&(sn)->queue);                                          \
    ngx_queue_insert_head(&(shm)->sh->queue, &(sn)->queue)


/*
 * A table in a shared memory zone of its own: its data, ctx_size bytes
 * zeroed, starts with the shm_t, set for entries of entry_size bytes whose
 * int64_t end is at end (a name added again: its data); NULL: an error.
 */
ngx_shm_zone_t *ngx_http_redis_ratelimit_shm_add(ngx_conf_t *cf,
    ngx_str_t *name, size_t size, void *tag, size_t ctx_size,
    size_t entry_size, size_t end, char *what);
/* a new table in shpool, whose messages name it */
ngx_int_t ngx_http_redis_ratelimit_shm_create(
    ngx_http_redis_ratelimit_shm_t *shm, ngx_slab_pool_t *shpool,
    ngx_str_t *name);
ngx_http_redis_ratelimit_shm_node_t *ngx_http_redis_ratelimit_shm_lookup(
    ngx_http_redis_ratelimit_shm_t *shm, ngx_str_t *key);
/* a new entry, zeroed, the most recent; NULL: full, or key over 0xffff */
ngx_http_redis_ratelimit_shm_node_t *ngx_http_redis_ratelimit_shm_alloc(
    ngx_http_redis_ratelimit_shm_t *shm, ngx_str_t *key, int64_t now);
/* the key's entry, made the most recent; with create, a new one if none */
ngx_http_redis_ratelimit_shm_node_t *ngx_http_redis_ratelimit_shm_get(
    ngx_http_redis_ratelimit_shm_t *shm, ngx_str_t *key, int64_t now,
    ngx_uint_t create);
void ngx_http_redis_ratelimit_shm_free(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_http_redis_ratelimit_shm_node_t *node);
/* ends the busy state of n nodes (NULL: none); undo: frees the _NEW ones */
void ngx_http_redis_ratelimit_shm_release(ngx_http_redis_ratelimit_shm_t *shm,
    ngx_http_redis_ratelimit_shm_node_t **nodes, ngx_uint_t n,
    ngx_uint_t undo);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_SHM_H_INCLUDED_ */
