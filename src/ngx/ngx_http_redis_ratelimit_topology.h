
/*
 * The topology question of a worker in Cluster or Sentinel mode (CLUSTER
 * SLOTS, or SENTINEL get-master-addr-by-name): asked when the core's
 * refresher says so, timed out, its answer handed to the mode's parser.
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_TOPOLOGY_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_TOPOLOGY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_node.h"
#include "rrl_refresher.h"
#include "rrl_topology_answer.h"


/*
 * The node to ask, connected or connecting (NULL: none), after the one
 * asked last (NULL: none yet); seeds or sentinels are taken in turn with
 * rrl_refresher_target(refresher).
 */
typedef ngx_http_redis_ratelimit_node_t *(*ngx_http_redis_ratelimit_target_pt)(
    rrl_refresher_t *refresher, ngx_http_redis_ratelimit_node_t *asked);

/*
 * An answer of node (value NULL: no reply came), in pool: NGX_OK if it
 * helped; else why ("" or RRL_ANSWER_WHY_MAX bytes) is logged if not "".
 */
typedef ngx_int_t (*ngx_http_redis_ratelimit_answer_pt)(
    ngx_http_redis_ratelimit_node_t *node, rrl_value_t *value,
    ngx_pool_t *pool, char *why);


typedef struct {
    const char                          *asking;  /* "sentinel", for logs */
    const char                          *late;    /* "timed out", for logs */
    int                                  argc;    /* the question */
    const char                          *argv[3];
    size_t                               argvlen[3];
    ngx_http_redis_ratelimit_target_pt   target;
    ngx_http_redis_ratelimit_answer_pt   answer;
} ngx_http_redis_ratelimit_question_t;


/* conf: the mode's quick, poll_ms and rotate; the rest is set here */
void ngx_http_redis_ratelimit_topology_init(ngx_log_t *log,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, rrl_refresher_conf_t *conf,
    ngx_http_redis_ratelimit_question_t *q);
/* the question is wanted: asked now, or as soon as the refresher lets */
void ngx_http_redis_ratelimit_topology_want(void);
void ngx_http_redis_ratelimit_topology_exit(void);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_TOPOLOGY_H_INCLUDED_ */
