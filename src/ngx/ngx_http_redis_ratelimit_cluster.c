
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
#include "rrl_refresher.h"
#include "rrl_slot_map.h"
#include "rrl_topology_answer.h"


/* refreshes at most this often: a burst of MOVED replies asks once */
#define NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN    100
#define NGX_HTTP_REDIS_RATELIMIT_REFRESH_RETRY  500


typedef struct {
    ngx_event_t                  timer;       /* the refresher's */
    rrl_refresher_t              refresher;   /* when to ask, which seed */
    rrl_slot_map_t              *map;         /* each slot's primary */
    ngx_http_redis_ratelimit_node_t  *asked;
    ngx_queue_t                 *nodes;       /* the link's */
    ngx_http_redis_ratelimit_main_conf_t  *conf;
    ngx_log_t                   *log;
} ngx_http_redis_ratelimit_cluster_t;


static int ngx_http_redis_ratelimit_cluster_send(void *data,
    uint64_t generation);
static void ngx_http_redis_ratelimit_cluster_timer(void *data, uint64_t ms);
static void ngx_http_redis_ratelimit_cluster_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_cluster_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static ngx_int_t ngx_http_redis_ratelimit_cluster_apply(
    rrl_slot_range_t *ranges, size_t n, ngx_http_redis_ratelimit_node_t *asked,
    ngx_pool_t *pool);


static ngx_http_redis_ratelimit_cluster_t  ngx_http_redis_ratelimit_cluster;


ngx_int_t
ngx_http_redis_ratelimit_cluster_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_queue_t *nodes)
{
    rrl_refresher_conf_t                 conf;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    ngx_memzero(cl, sizeof(ngx_http_redis_ratelimit_cluster_t));
    ngx_memzero(&conf, sizeof(rrl_refresher_conf_t));

    cl->nodes = nodes;
    cl->conf = rmcf;
    cl->log = cycle->log;

    cl->timer.handler = ngx_http_redis_ratelimit_cluster_timer_handler;
    cl->timer.data = cl;
    cl->timer.log = cycle->log;
    cl->timer.cancelable = 1;

    /* two failures in a row are retried quickly, then slower */
    conf.min_ms = NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN;
    conf.retry_ms = NGX_HTTP_REDIS_RATELIMIT_REFRESH_RETRY;
    conf.quick = 2;
    conf.timeout_ms = rmcf->connect_timeout + rmcf->timeout;
    conf.send = ngx_http_redis_ratelimit_cluster_send;
    conf.timer = ngx_http_redis_ratelimit_cluster_timer;

    rrl_refresher_init(&cl->refresher, &conf);

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
    rrl_refresher_stop(&ngx_http_redis_ratelimit_cluster.refresher);
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
    if (ngx_http_redis_ratelimit_cluster.map == NULL || ngx_exiting
        || ngx_quit || ngx_terminate)
    {
        /* a single Redis may answer MOVED too: it is no cluster of ours */
        return;
    }

    rrl_refresher_want(&ngx_http_redis_ratelimit_cluster.refresher,
                       (int64_t) ngx_current_msec);
}


/* asks a primary in use, the one after the last asked; else a seed */

static int
ngx_http_redis_ratelimit_cluster_send(void *data, uint64_t generation)
{
    ngx_queue_t                         *q, *start;
    ngx_http_redis_ratelimit_addr_t     *addr;
    ngx_http_redis_ratelimit_node_t     *node;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    /* round the nodes from the one after the last asked, to it */
    start = cl->asked ? &cl->asked->queue : ngx_queue_sentinel(cl->nodes);
    q = start;
    node = NULL;

    do {
        q = ngx_queue_next(q);

        if (q == ngx_queue_sentinel(cl->nodes)) {
            continue;
        }

        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->mapped && node->connected) {
            break;
        }

        node = NULL;

    } while (q != start);

    if (node == NULL) {
        addr = cl->conf->addrs.elts;
        addr = &addr[rrl_refresher_target(&cl->refresher,
                                          cl->conf->addrs.nelts, 1)];

        node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                                 addr->host, addr->port,
                                                 addr->unix_path);
        if (node == NULL) {
            return RRL_ERROR;
        }

        /* a seed out of the map is closed once it has answered */
        node->used = 1;
        ngx_http_redis_ratelimit_node_connect(node);
    }

    if (ngx_http_redis_ratelimit_command(node,
                                    ngx_http_redis_ratelimit_cluster_reply,
                                    (void *) (uintptr_t) generation,
                                    "CLUSTER SLOTS")
        != NGX_OK)
    {
        return RRL_ERROR;
    }

    node->in_flight++;
    cl->asked = node;

    return RRL_OK;
}


static void
ngx_http_redis_ratelimit_cluster_timer(void *data, uint64_t ms)
{
    ngx_event_t  *timer = &ngx_http_redis_ratelimit_cluster.timer;

    if (timer->timer_set) {
        ngx_del_timer(timer);
    }

    if (ms) {
        ngx_add_timer(timer, (ngx_msec_t) ms);
    }
}


static void
ngx_http_redis_ratelimit_cluster_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_cluster_t  *cl = ev->data;

    if (!rrl_refresher_fired(&cl->refresher)) {
        /* the delay before the next refresh is over */
        ngx_http_redis_ratelimit_cluster_refresh();
        return;
    }

    ngx_http_redis_ratelimit_log_failure(ev->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V "
                                     "timed out", &cl->asked->name);

    rrl_refresher_failed(&cl->refresher);
}


static void
ngx_http_redis_ratelimit_cluster_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                               n, max;
    ngx_pool_t                          *pool;
    redisReply                          *rr = reply;
    rrl_value_t                         *value;
    rrl_slot_range_t                    *ranges;
    ngx_http_redis_ratelimit_node_t     *node = ac->ev.data;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;
    char                                 why[RRL_ANSWER_WHY_MAX];

    node->in_flight--;

    if (!rrl_refresher_answer(&cl->refresher, (uintptr_t) privdata)) {
        goto done;
    }

    pool = ngx_create_pool(4096, node->log);
    if (pool == NULL) {
        goto failed;
    }

    why[0] = '\0';
    max = rr ? ngx_min(rr->elements, RRL_CLUSTER_SLOTS) : 0;

    value = rr ? ngx_http_redis_ratelimit_value(pool, rr) : NULL;
    ranges = ngx_palloc(pool, (max ? max : 1) * sizeof(rrl_slot_range_t));

    if ((rr && value == NULL) || ranges == NULL
        || rrl_cluster_slots_answer(value, ranges, max, &n, why) != RRL_OK
        || ngx_http_redis_ratelimit_cluster_apply(ranges, n, node, pool)
           != NGX_OK)
    {
        ngx_destroy_pool(pool);

        if (why[0]) {
            /* else the core has logged what was wrong, or no memory */
            ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V %s",
                                     &node->name, why);
        }

        goto failed;
    }

    ngx_destroy_pool(pool);

    if (rrl_refresher_answered(&cl->refresher)) {
        ngx_http_redis_ratelimit_cluster_refresh();
    }

    goto done;

failed:

    rrl_refresher_failed(&cl->refresher);

done:

    ngx_http_redis_ratelimit_node_idle(node);
}


/*
 * The new map: each slot's primary; primaries new to it are connected,
 * nodes out of it are closed once idle.
 */

static ngx_int_t
ngx_http_redis_ratelimit_cluster_apply(rrl_slot_range_t *ranges, size_t n,
    ngx_http_redis_ratelimit_node_t *asked, ngx_pool_t *pool)
{
    size_t                               i, covered, primaries;
    u_char                              *host;
    ngx_queue_t                         *q;
    ngx_http_redis_ratelimit_node_t     *node, **nodes;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

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
            ngx_http_redis_ratelimit_log_failure(cl->log,
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

        if (node->role != NGX_HTTP_REDIS_RATELIMIT_DATA) {
            continue;
        }

        if (node->mapped) {
            ngx_http_redis_ratelimit_node_use(node, 1);

        } else if (node->reconnect || node->used) {
            /* no more a primary (failed over, removed), or a seed */
            ngx_http_redis_ratelimit_node_use(node, 0);
        }
    }

    ngx_log_error(NGX_LOG_INFO, cl->log, 0,
                  "redis_ratelimit: cluster slot map from %V: %uz of %d "
                  "slots on %uz primaries", &asked->name, covered,
                  RRL_CLUSTER_SLOTS, primaries);

    return NGX_OK;
}
