
/*
 * The per-worker Redis link, inside: what routes calls to the nodes in
 * each mode: one server, the primary a Sentinel names, or the primary of a
 * Cluster slot.
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_node.h"


/* cluster: the slot map */
ngx_int_t ngx_http_redis_ratelimit_cluster_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_queue_t *nodes);
void ngx_http_redis_ratelimit_cluster_refresh(void);
void ngx_http_redis_ratelimit_cluster_exit(void);
/* a slot's primary; NULL (a refresh is asked): none known */
ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_cluster_node(
    ngx_uint_t slot);
/* MOVED: the slot's primary is node now */
void ngx_http_redis_ratelimit_cluster_moved(ngx_uint_t slot,
    ngx_http_redis_ratelimit_node_t *node);

/* sentinel: which node is the primary */
ngx_int_t ngx_http_redis_ratelimit_sentinel_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf);
void ngx_http_redis_ratelimit_sentinel_ask(void);
void ngx_http_redis_ratelimit_sentinel_exit(void);
/* the primary named last; NULL: none yet */
ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_sentinel_primary(
    void);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_LINK_H_INCLUDED_ */
