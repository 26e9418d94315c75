
/*
 * Redis Cluster: the slot map, read with CLUSTER SLOTS from a seed or a
 * known primary, at start and whenever a MOVED, a CLUSTERDOWN or a lost
 * primary says it changed; one node (connection) a primary. A refresh is
 * never awaited by a request: until it is answered, calls go where the
 * map (and MOVED) said last.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_link.h"
#include "ngx_http_redis_ratelimit_topology.h"
#include "rrl_slot_map.h"


typedef struct {
    rrl_slot_map_t              *map;         /* each slot's primary */
    ngx_queue_t                 *nodes;       /* the link's */
    ngx_http_redis_ratelimit_main_conf_t  *conf;
} ngx_http_redis_ratelimit_cluster_t;


static ngx_http_redis_ratelimit_node_t *
    ngx_http_redis_ratelimit_cluster_target(rrl_refresher_t *refresher,
    ngx_http_redis_ratelimit_node_t *asked);
static ngx_int_t ngx_http_redis_ratelimit_cluster_answer(
    ngx_http_redis_ratelimit_node_t *node, rrl_value_t *value,
    ngx_pool_t *pool, char *why);


static ngx_http_redis_ratelimit_cluster_t  ngx_http_redis_ratelimit_cluster;


ngx_int_t
ngx_http_redis_ratelimit_cluster_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_queue_t *nodes)
{
    rrl_refresher_conf_t                 conf;
    ngx_http_redis_ratelimit_question_t  question = {
        "CLUSTER SLOTS on", "timed out", 2, { "CLUSTER", "SLOTS" },
        { sizeof("CLUSTER") - 1, sizeof("SLOTS") - 1 },
        ngx_http_redis_ratelimit_cluster_target,
        ngx_http_redis_ratelimit_cluster_answer
    };
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    ngx_memzero(cl, sizeof(ngx_http_redis_ratelimit_cluster_t));
    ngx_memzero(&conf, sizeof(rrl_refresher_conf_t));

    cl->nodes = nodes;
    cl->conf = rmcf;

    /* two failures in a row are retried quickly, then slower */
    conf.quick = 2;

    ngx_http_redis_ratelimit_topology_init(cycle->log, rmcf, &conf, &question);

    cl->map = rrl_slot_map_create();
    if (cl->map == NULL) {
        return NGX_ERROR;
    }

    ngx_http_redis_ratelimit_cluster_refresh();

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_cluster_exit(void)
{
    ngx_http_redis_ratelimit_topology_exit();
}


/* the primary of a slot; NULL (and the map is refreshed): none known */

ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_cluster_node(ngx_uint_t slot)
{
    ngx_http_redis_ratelimit_node_t     *node;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    node = cl->map ? rrl_slot_map_node(cl->map, slot) : NULL;

    if (node == NULL) {
        ngx_http_redis_ratelimit_cluster_refresh();
    }

    return node;
}


/* MOVED: the slot has a new primary for good; the map is refreshed */

void
ngx_http_redis_ratelimit_cluster_moved(ngx_uint_t slot,
    ngx_http_redis_ratelimit_node_t *node)
{
    rrl_slot_map_set(ngx_http_redis_ratelimit_cluster.map, slot, node);
    ngx_http_redis_ratelimit_node_use(node, 1);
    ngx_http_redis_ratelimit_cluster_refresh();
}


void
ngx_http_redis_ratelimit_cluster_refresh(void)
{
    /* a single Redis may answer MOVED too: it is no cluster of ours */

    if (ngx_http_redis_ratelimit_cluster.map) {
        ngx_http_redis_ratelimit_topology_want();
    }
}


/* a primary in use, the one after the last asked; else a seed */

static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_cluster_target(rrl_refresher_t *refresher,
    ngx_http_redis_ratelimit_node_t *asked)
{
    ngx_queue_t                         *q, *start;
    ngx_http_redis_ratelimit_addr_t     *addr;
    ngx_http_redis_ratelimit_node_t     *node;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    /* round the nodes from the one after the last asked, to it */
    start = asked ? &asked->queue : ngx_queue_sentinel(cl->nodes);
    q = start;

    do {
        q = ngx_queue_next(q);

        if (q == ngx_queue_sentinel(cl->nodes)) {
            continue;
        }

        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->mapped && node->connected) {
            return node;
        }

    } while (q != start);

    addr = cl->conf->addrs.elts;
    addr = &addr[rrl_refresher_target(refresher, cl->conf->addrs.nelts, 1)];

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             addr->host, addr->port,
                                             addr->unix_path);
    if (node) {
        /* a seed out of the map is closed once it has answered */
        node->used = 1;
        ngx_http_redis_ratelimit_node_connect(node);
    }

    return node;
}


/*
 * The new map from CLUSTER SLOTS: each slot's primary; primaries new to it
 * are connected, nodes out of it are closed once idle.
 */

static ngx_int_t
ngx_http_redis_ratelimit_cluster_answer(ngx_http_redis_ratelimit_node_t *asked,
    rrl_value_t *value, ngx_pool_t *pool, char *why)
{
    size_t                               i, n, max, covered, primaries;
    u_char                              *host;
    ngx_queue_t                         *q;
    rrl_slot_range_t                    *ranges;
    ngx_http_redis_ratelimit_node_t     *node, **nodes;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    max = value ? ngx_min(value->nelements, RRL_CLUSTER_SLOTS) : 0;

    ranges = ngx_palloc(pool, (max ? max : 1) * sizeof(rrl_slot_range_t));

    if (ranges == NULL
        || rrl_cluster_slots_answer(value, ranges, max, &n, why) != RRL_OK)
    {
        return NGX_ERROR;
    }

    nodes = ngx_palloc(pool, (n ? n : 1) * sizeof(void *));
    if (nodes == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        nodes[i] = NULL;

        /* "": the node asked (Redis does not know its own address) */
        host = ranges[i].host[0] ? (u_char *) ranges[i].host : asked->host;

        if (host == NULL
            || !ngx_http_redis_ratelimit_numeric((char *) host))
        {
            ngx_http_redis_ratelimit_log_failure(asked->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V "
                                     "names a primary by \"%s\", not by a "
                                     "numeric address: slots %ud-%ud are "
                                     "left out", &asked->name,
                                     host ? (char *) host : "",
                                     ranges[i].start, ranges[i].end);
            continue;
        }

        nodes[i] = ngx_http_redis_ratelimit_node_get(
                                             NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             host, (in_port_t) ranges[i].port,
                                             NULL);
        if (nodes[i] == NULL) {
            return NGX_ERROR;
        }

        /* no other address of this map takes its node over */
        nodes[i]->mapped = 1;
    }

    if (rrl_slot_map_replace(cl->map, ranges, (void *const *) nodes, n,
                             &covered, &primaries)
        != RRL_OK)
    {
        return NGX_ERROR;
    }

    for (q = ngx_queue_head(cl->nodes);
         q != ngx_queue_sentinel(cl->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);
        node->mapped = rrl_slot_map_serves(cl->map, node);

        /* out of it: no more a primary (failed over, removed), or a seed */
        ngx_http_redis_ratelimit_node_use(node, node->mapped);
    }

    ngx_log_error(NGX_LOG_INFO, asked->log, 0,
                  "redis_ratelimit: cluster slot map from %V: %uz of %d "
                  "slots on %uz primaries", &asked->name, covered,
                  RRL_CLUSTER_SLOTS, primaries);

    return NGX_OK;
}
