
/*
 * Sentinel: the primary is the address the sentinels give for the name of
 * "sentinel=NAME". They are asked at start, every second, and at once
 * whenever the primary is lost or answers as a replica (READONLY): after a
 * failover, the next answer names the new primary. The periodic question
 * catches a planned failover, where the old primary stays a writable
 * primary for seconds after the switch. One sentinel at a time, the next
 * one when it fails.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_link.h"
#include "rrl_primary.h"
#include "rrl_refresher.h"
#include "rrl_topology_answer.h"


/* asks at most this often while the answer does not help */
#define NGX_HTTP_REDIS_RATELIMIT_ASK_MIN    100
#define NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY  500
#define NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY  1000


typedef struct {
    ngx_event_t                  timer;       /* the refresher's */
    rrl_refresher_t              refresher;   /* when to ask, and whom */
    rrl_primary_t                primary;     /* the node named */
    ngx_array_t                  sentinels;   /* of node_t * */
    ngx_http_redis_ratelimit_main_conf_t  *conf;
} ngx_http_redis_ratelimit_sentinel_t;


static int ngx_http_redis_ratelimit_sentinel_send(void *data,
    uint64_t generation);
static void ngx_http_redis_ratelimit_sentinel_timer(void *data, uint64_t ms);
static void ngx_http_redis_ratelimit_sentinel_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_sentinel_reply(redisAsyncContext *ac,
    void *reply, void *privdata);


static ngx_http_redis_ratelimit_sentinel_t  ngx_http_redis_ratelimit_sentinel;


ngx_int_t
ngx_http_redis_ratelimit_sentinel_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    ngx_uint_t                             i;
    rrl_refresher_conf_t                   conf;
    ngx_http_redis_ratelimit_addr_t       *addr;
    ngx_http_redis_ratelimit_node_t      **sentinel;
    ngx_http_redis_ratelimit_sentinel_t   *st;

    st = &ngx_http_redis_ratelimit_sentinel;

    ngx_memzero(st, sizeof(ngx_http_redis_ratelimit_sentinel_t));
    ngx_memzero(&conf, sizeof(rrl_refresher_conf_t));

    st->timer.handler = ngx_http_redis_ratelimit_sentinel_timer_handler;
    st->timer.data = st;
    st->timer.log = cycle->log;
    st->timer.cancelable = 1;

    /* each sentinel once quickly, then slower; the next after a failure */
    conf.min_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_MIN;
    conf.retry_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY;
    conf.quick = rmcf->addrs.nelts;
    conf.poll_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY;
    conf.timeout_ms = rmcf->connect_timeout + rmcf->timeout;
    conf.rotate = 1;
    conf.send = ngx_http_redis_ratelimit_sentinel_send;
    conf.timer = ngx_http_redis_ratelimit_sentinel_timer;

    rrl_refresher_init(&st->refresher, &conf);

    if (ngx_array_init(&st->sentinels, cycle->pool, rmcf->addrs.nelts,
                       sizeof(ngx_http_redis_ratelimit_node_t *))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    addr = rmcf->addrs.elts;

    for (i = 0; i < rmcf->addrs.nelts; i++) {
        sentinel = ngx_array_push(&st->sentinels);
        if (sentinel == NULL) {
            return NGX_ERROR;
        }

        *sentinel = ngx_http_redis_ratelimit_node_get(
                                         NGX_HTTP_REDIS_RATELIMIT_SENTINEL,
                                         addr[i].host, addr[i].port,
                                         addr[i].unix_path);
        if (*sentinel == NULL) {
            return NGX_ERROR;
        }
    }

    st->conf = rmcf;

    ngx_http_redis_ratelimit_sentinel_ask();

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_sentinel_exit(void)
{
    rrl_refresher_stop(&ngx_http_redis_ratelimit_sentinel.refresher);
}


/* the primary the sentinels named last; NULL: none yet */

ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_sentinel_primary(void)
{
    return ngx_http_redis_ratelimit_sentinel.primary.node;
}


void
ngx_http_redis_ratelimit_sentinel_ask(void)
{
    if (ngx_http_redis_ratelimit_sentinel.conf == NULL || ngx_exiting
        || ngx_quit || ngx_terminate)
    {
        /* not in Sentinel mode */
        return;
    }

    rrl_refresher_want(&ngx_http_redis_ratelimit_sentinel.refresher,
                       (int64_t) ngx_current_msec);
}


/* the sentinel of the turn; connected when needed, kept while it answers */

static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_sentinel_current(void)
{
    ngx_http_redis_ratelimit_node_t      **sentinels;
    ngx_http_redis_ratelimit_sentinel_t   *st;

    st = &ngx_http_redis_ratelimit_sentinel;
    sentinels = st->sentinels.elts;

    return sentinels[rrl_refresher_target(&st->refresher, st->sentinels.nelts,
                                          0)];
}


static int
ngx_http_redis_ratelimit_sentinel_send(void *data, uint64_t generation)
{
    ngx_http_redis_ratelimit_node_t       *node;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_redis_ratelimit_sentinel.conf;
    node = ngx_http_redis_ratelimit_sentinel_current();

    ngx_http_redis_ratelimit_node_connect(node);

    if (ngx_http_redis_ratelimit_command(node,
                                  ngx_http_redis_ratelimit_sentinel_reply,
                                  (void *) (uintptr_t) generation,
                                  "SENTINEL get-master-addr-by-name %b",
                                  rmcf->sentinel_name.data,
                                  rmcf->sentinel_name.len)
        != NGX_OK)
    {
        return RRL_ERROR;
    }

    return RRL_OK;
}


static void
ngx_http_redis_ratelimit_sentinel_timer(void *data, uint64_t ms)
{
    ngx_event_t  *timer = &ngx_http_redis_ratelimit_sentinel.timer;

    if (timer->timer_set) {
        ngx_del_timer(timer);
    }

    if (ms) {
        ngx_add_timer(timer, (ngx_msec_t) ms);
    }
}


static void
ngx_http_redis_ratelimit_sentinel_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_sentinel_t  *st = ev->data;

    if (!rrl_refresher_fired(&st->refresher)) {
        /* the delay before asking again is over, or the next poll is due */
        ngx_http_redis_ratelimit_sentinel_ask();
        return;
    }

    ngx_http_redis_ratelimit_log_failure(ev->log,
                                  "redis_ratelimit: sentinel %V did not "
                                  "answer in time",
                            &ngx_http_redis_ratelimit_sentinel_current()->name);

    rrl_refresher_failed(&st->refresher);
}


static void
ngx_http_redis_ratelimit_sentinel_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    int                                    rc;
    void                                  *previous;
    unsigned                               port;
    ngx_pool_t                            *pool;
    redisReply                            *rr = reply;
    rrl_value_t                           *value;
    ngx_http_redis_ratelimit_node_t       *sentinel, *node, *old;
    ngx_http_redis_ratelimit_sentinel_t   *st;
    char                                   host[RRL_HOST_MAX];
    char                                   why[RRL_ANSWER_WHY_MAX];

    st = &ngx_http_redis_ratelimit_sentinel;
    sentinel = ac->ev.data;

    if (!rrl_refresher_answer(&st->refresher, (uintptr_t) privdata)) {
        return;
    }

    pool = ngx_create_pool(1024, sentinel->log);
    if (pool == NULL) {
        goto failed;
    }

    why[0] = '\0';
    value = rr ? ngx_http_redis_ratelimit_value(pool, rr) : NULL;

    rc = (rr && value == NULL)
         ? RRL_ERROR
         : rrl_sentinel_answer(value, (char *) st->conf->sentinel_name.data,
                               st->conf->sentinel_name.len, host, &port, why);

    ngx_destroy_pool(pool);

    if (rc != RRL_OK) {
        if (why[0]) {
            /* else the core has logged what was wrong, or no memory */
            ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V %s",
                                  &sentinel->name, why);
        }

        goto failed;
    }

    if (!ngx_http_redis_ratelimit_numeric(host)) {
        ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V names the "
                                  "primary by \"%s\", not by a numeric "
                                  "address", &sentinel->name, host);
        goto failed;
    }

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             (u_char *) host,
                                             (in_port_t) port, NULL);
    if (node == NULL) {
        goto failed;
    }

    rc = rrl_primary_switch(&st->primary, node, &previous);
    old = previous;

    if (rc != RRL_PRIMARY_SAME) {
        ngx_log_error((old ? NGX_LOG_WARN : NGX_LOG_INFO), sentinel->log, 0,
                      "redis_ratelimit: sentinel %V: the primary of \"%V\" "
                      "is %V", &sentinel->name, &st->conf->sentinel_name,
                      &node->name);
    }

    /* "mapped": no other address takes its node over */
    node->mapped = 1;
    ngx_http_redis_ratelimit_node_use(node, 1);

    if (old) {
        old->mapped = 0;
        ngx_http_redis_ratelimit_node_use(old, 0);
    }

    if (rrl_refresher_answered(&st->refresher)) {
        ngx_http_redis_ratelimit_sentinel_ask();
    }

    return;

failed:

    rrl_refresher_failed(&st->refresher);
}
