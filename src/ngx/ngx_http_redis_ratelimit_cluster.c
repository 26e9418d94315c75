
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


/* refreshes at most this often: a burst of MOVED replies asks once */
#define NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN    100
#define NGX_HTTP_REDIS_RATELIMIT_REFRESH_RETRY  500


typedef struct {
    ngx_event_t                  timer;       /* a timeout, or a delay */
    uintptr_t                    generation;  /* of the refresh awaited */
    ngx_uint_t                   next_seed;
    ngx_msec_t                   last;        /* when the last one was sent */
    ngx_uint_t                   failures;    /* in a row */
    ngx_http_redis_ratelimit_node_t  *asked;
    unsigned                     refreshing:1; /* CLUSTER SLOTS is out */
    unsigned                     again:1;     /* wanted while one was out */
} ngx_http_redis_ratelimit_cluster_t;


static void ngx_http_redis_ratelimit_cluster_send(void);
static void ngx_http_redis_ratelimit_cluster_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_cluster_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static ngx_int_t ngx_http_redis_ratelimit_cluster_apply(
    rrl_slot_range_t *ranges, size_t n, ngx_http_redis_ratelimit_node_t *asked);
static void ngx_http_redis_ratelimit_cluster_retry(void);


static ngx_http_redis_ratelimit_cluster_t  ngx_http_redis_ratelimit_cluster;


ngx_int_t
ngx_http_redis_ratelimit_cluster_init(ngx_cycle_t *cycle)
{
    ngx_http_redis_ratelimit_link_t     *link = &ngx_http_redis_ratelimit_link;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    ngx_memzero(cl, sizeof(ngx_http_redis_ratelimit_cluster_t));

    cl->timer.handler = ngx_http_redis_ratelimit_cluster_timer_handler;
    cl->timer.data = cl;
    cl->timer.log = cycle->log;
    cl->timer.cancelable = 1;

    link->slots = ngx_calloc(RRL_CLUSTER_SLOTS
                             * sizeof(ngx_http_redis_ratelimit_node_t *),
                             cycle->log);
    if (link->slots == NULL) {
        return NGX_ERROR;
    }

    ngx_http_redis_ratelimit_cluster_refresh();

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_cluster_exit(void)
{
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    if (cl->timer.timer_set) {
        ngx_del_timer(&cl->timer);
    }

    cl->generation++;
    cl->refreshing = 0;
}


void
ngx_http_redis_ratelimit_cluster_refresh(void)
{
    ngx_msec_t                           elapsed;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    if (ngx_http_redis_ratelimit_link.conf->mode
        != NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER
        || ngx_http_redis_ratelimit_link.exiting || ngx_exiting || ngx_quit
        || ngx_terminate)
    {
        /* a single Redis may answer MOVED too: it is no cluster of ours */
        return;
    }

    if (cl->refreshing) {
        cl->again = 1;
        return;
    }

    if (cl->timer.timer_set) {
        /* one is due already */
        return;
    }

    elapsed = ngx_current_msec - cl->last;

    if (cl->last && elapsed < NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN) {
        ngx_add_timer(&cl->timer,
                      NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN - elapsed);
        return;
    }

    ngx_http_redis_ratelimit_cluster_send();
}


/* asks a primary in use, the one after the last asked; else a seed */

static void
ngx_http_redis_ratelimit_cluster_send(void)
{
    ngx_uint_t                            past;
    ngx_queue_t                          *q;
    ngx_http_redis_ratelimit_addr_t      *addr;
    ngx_http_redis_ratelimit_node_t      *node, *first, *next;
    ngx_http_redis_ratelimit_link_t      *link = &ngx_http_redis_ratelimit_link;
    ngx_http_redis_ratelimit_cluster_t   *cl = &ngx_http_redis_ratelimit_cluster;
    ngx_http_redis_ratelimit_main_conf_t *rmcf;

    rmcf = link->conf;

    first = NULL;
    next = NULL;
    past = (cl->asked == NULL);

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node == cl->asked) {
            past = 1;
            continue;
        }

        if (!node->mapped || !node->connected) {
            continue;
        }

        if (first == NULL) {
            first = node;
        }

        if (past) {
            next = node;
            break;
        }
    }

    node = next ? next : first;

    if (node == NULL && cl->asked && cl->asked->mapped
        && cl->asked->connected)
    {
        node = cl->asked;
    }

    if (node == NULL) {
        addr = rmcf->addrs.elts;
        addr = &addr[cl->next_seed++ % rmcf->addrs.nelts];

        node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                                 addr->host, addr->port,
                                                 addr->unix_path);
        if (node == NULL) {
            ngx_http_redis_ratelimit_cluster_retry();
            return;
        }

        /* a seed out of the map is closed once it has answered */
        node->used = 1;
        ngx_http_redis_ratelimit_node_connect(node);
    }

    cl->generation++;

    if (ngx_http_redis_ratelimit_command(node,
                                    ngx_http_redis_ratelimit_cluster_reply,
                                    (void *) cl->generation, "CLUSTER SLOTS")
        != NGX_OK)
    {
        ngx_http_redis_ratelimit_cluster_retry();
        return;
    }

    node->in_flight++;

    cl->asked = node;
    cl->refreshing = 1;
    cl->last = ngx_current_msec;

    ngx_add_timer(&cl->timer, rmcf->connect_timeout + rmcf->timeout);
}


static void
ngx_http_redis_ratelimit_cluster_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_cluster_t  *cl = ev->data;

    if (!cl->refreshing) {
        /* the delay before the next refresh is over */
        ngx_http_redis_ratelimit_cluster_refresh();
        return;
    }

    ngx_http_redis_ratelimit_log_failure(ev->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V "
                                     "timed out", &cl->asked->name);

    /* a late reply is ignored */
    cl->generation++;
    cl->refreshing = 0;

    ngx_http_redis_ratelimit_cluster_retry();
}


static void
ngx_http_redis_ratelimit_cluster_retry(void)
{
    ngx_msec_t                           delay;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;

    if (ngx_http_redis_ratelimit_link.exiting || cl->timer.timer_set) {
        return;
    }

    cl->failures++;
    cl->again = 0;

    delay = (cl->failures < 3) ? NGX_HTTP_REDIS_RATELIMIT_REFRESH_MIN
                               : NGX_HTTP_REDIS_RATELIMIT_REFRESH_RETRY;

    ngx_add_timer(&cl->timer, delay);
}


static void
ngx_http_redis_ratelimit_cluster_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                               n, max, len;
    ngx_pool_t                          *pool;
    redisReply                          *rr = reply;
    rrl_value_t                         *value;
    rrl_slot_range_t                    *ranges;
    ngx_http_redis_ratelimit_node_t     *node = ac->ev.data;
    ngx_http_redis_ratelimit_cluster_t  *cl = &ngx_http_redis_ratelimit_cluster;
    u_char                               text[256];

    node->in_flight--;

    if ((uintptr_t) privdata != cl->generation || !cl->refreshing) {
        goto done;
    }

    cl->refreshing = 0;

    if (cl->timer.timer_set) {
        ngx_del_timer(&cl->timer);
    }

    if (rr == NULL || rr->type != REDIS_REPLY_ARRAY) {
        /* an error's text escaped: a hostile server forges no log line */
        len = (rr && rr->type == REDIS_REPLY_ERROR)
              ? rrl_printable((char *) text, sizeof(text),
                              (u_char *) rr->str, rr->len)
              : (size_t) (ngx_cpystrn(text, (u_char *) (rr ? "not an array"
                                                            : "no reply"),
                                      sizeof(text))
                          - text);

        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V "
                                     "failed: %*s", &node->name, len, text);
        goto failed;
    }

    pool = ngx_create_pool(4096, node->log);
    if (pool == NULL) {
        goto failed;
    }

    max = ngx_min(rr->elements, RRL_CLUSTER_SLOTS);

    value = ngx_http_redis_ratelimit_value(pool, rr);
    ranges = ngx_palloc(pool, (max ? max : 1) * sizeof(rrl_slot_range_t));

    if (value == NULL || ranges == NULL
        || rrl_cluster_slots_parse(value, ranges, max, &n) != RRL_OK
        || ngx_http_redis_ratelimit_cluster_apply(ranges, n, node) != NGX_OK)
    {
        /* the core has logged what was wrong */
        ngx_destroy_pool(pool);
        goto failed;
    }

    ngx_destroy_pool(pool);

    cl->failures = 0;

    if (cl->again) {
        cl->again = 0;
        ngx_http_redis_ratelimit_cluster_refresh();
    }

    goto done;

failed:

    ngx_http_redis_ratelimit_cluster_retry();

done:

    ngx_http_redis_ratelimit_node_idle(node);
}


/*
 * The new map: each slot's primary; primaries new to it are connected,
 * nodes out of it are closed once idle.
 */

static ngx_int_t
ngx_http_redis_ratelimit_cluster_apply(rrl_slot_range_t *ranges, size_t n,
    ngx_http_redis_ratelimit_node_t *asked)
{
    size_t                             i;
    u_char                            *host;
    ngx_uint_t                         s, covered, primaries;
    ngx_queue_t                       *q;
    ngx_http_redis_ratelimit_node_t   *node, **slots;
    ngx_http_redis_ratelimit_link_t   *link = &ngx_http_redis_ratelimit_link;

    slots = ngx_calloc(RRL_CLUSTER_SLOTS
                       * sizeof(ngx_http_redis_ratelimit_node_t *), link->log);
    if (slots == NULL) {
        return NGX_ERROR;
    }

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);
        node->mapped = 0;
    }

    covered = 0;
    primaries = 0;

    for (i = 0; i < n; i++) {

        /* "": the node asked (Redis does not know its own address) */
        host = ranges[i].host[0] ? (u_char *) ranges[i].host : asked->host;

        if (host == NULL
            || !ngx_http_redis_ratelimit_numeric((char *) host))
        {
            ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: CLUSTER SLOTS on %V "
                                     "names a primary by \"%s\", not by a "
                                     "numeric address: slots %ud-%ud are "
                                     "left out", &asked->name,
                                     host ? (char *) host : "",
                                     ranges[i].start, ranges[i].end);
            continue;
        }

        node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                                 host,
                                                 (in_port_t) ranges[i].port,
                                                 NULL);
        if (node == NULL) {
            ngx_free(slots);
            return NGX_ERROR;
        }

        if (!node->mapped) {
            node->mapped = 1;
            primaries++;
        }

        for (s = ranges[i].start; s <= ranges[i].end; s++) {
            slots[s] = node;
        }

        covered += ranges[i].end - ranges[i].start + 1;
    }

    ngx_free(link->slots);
    link->slots = slots;

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

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

    ngx_log_error(NGX_LOG_INFO, link->log, 0,
                  "redis_ratelimit: cluster slot map from %V: %ui of %d "
                  "slots on %ui primaries", &asked->name, covered,
                  RRL_CLUSTER_SLOTS, primaries);

    return NGX_OK;
}
