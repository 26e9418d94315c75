
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


/* asks at most this often while the answer does not help */
#define NGX_HTTP_REDIS_RATELIMIT_ASK_MIN    100
#define NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY  500
#define NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY  1000


typedef struct {
    ngx_event_t                  timer;       /* a timeout, or a delay */
    uintptr_t                    generation;  /* of the question awaited */
    ngx_uint_t                   current;     /* the sentinel asked */
    ngx_uint_t                   failures;    /* in a row */
    ngx_msec_t                   last;        /* when last asked */
    ngx_array_t                  sentinels;   /* of node_t * */
    unsigned                     asking:1;
    unsigned                     again:1;     /* wanted while asking */
    unsigned                     polling:1;   /* the timer: the next poll */
} ngx_http_redis_ratelimit_sentinel_t;


static void ngx_http_redis_ratelimit_sentinel_send(void);
static void ngx_http_redis_ratelimit_sentinel_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_sentinel_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static void ngx_http_redis_ratelimit_sentinel_retry(void);


static ngx_http_redis_ratelimit_sentinel_t  ngx_http_redis_ratelimit_sentinel;


ngx_int_t
ngx_http_redis_ratelimit_sentinel_init(ngx_cycle_t *cycle)
{
    ngx_uint_t                             i;
    ngx_http_redis_ratelimit_addr_t       *addr;
    ngx_http_redis_ratelimit_node_t      **sentinel;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;
    ngx_http_redis_ratelimit_sentinel_t   *st;

    st = &ngx_http_redis_ratelimit_sentinel;
    rmcf = ngx_http_redis_ratelimit_link.conf;

    ngx_memzero(st, sizeof(ngx_http_redis_ratelimit_sentinel_t));

    st->timer.handler = ngx_http_redis_ratelimit_sentinel_timer_handler;
    st->timer.data = st;
    st->timer.log = cycle->log;
    st->timer.cancelable = 1;

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

    ngx_http_redis_ratelimit_sentinel_ask();

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_sentinel_exit(void)
{
    ngx_http_redis_ratelimit_sentinel_t  *st;

    st = &ngx_http_redis_ratelimit_sentinel;

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    st->generation++;
    st->asking = 0;
}


void
ngx_http_redis_ratelimit_sentinel_ask(void)
{
    ngx_msec_t                            elapsed;
    ngx_http_redis_ratelimit_sentinel_t  *st;

    st = &ngx_http_redis_ratelimit_sentinel;

    if (ngx_http_redis_ratelimit_link.conf->mode
        != NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL
        || ngx_http_redis_ratelimit_link.exiting || ngx_exiting || ngx_quit
        || ngx_terminate)
    {
        return;
    }

    if (st->asking) {
        st->again = 1;
        return;
    }

    if (st->timer.timer_set) {
        if (!st->polling) {
            /* asking is due already */
            return;
        }

        /* not the next poll: now */
        ngx_del_timer(&st->timer);
        st->polling = 0;
    }

    elapsed = ngx_current_msec - st->last;

    if (st->last && elapsed < NGX_HTTP_REDIS_RATELIMIT_ASK_MIN) {
        ngx_add_timer(&st->timer, NGX_HTTP_REDIS_RATELIMIT_ASK_MIN - elapsed);
        return;
    }

    ngx_http_redis_ratelimit_sentinel_send();
}


static void
ngx_http_redis_ratelimit_sentinel_send(void)
{
    ngx_http_redis_ratelimit_node_t      **sentinels, *node;
    ngx_http_redis_ratelimit_sentinel_t   *st;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    st = &ngx_http_redis_ratelimit_sentinel;
    rmcf = ngx_http_redis_ratelimit_link.conf;

    sentinels = st->sentinels.elts;
    node = sentinels[st->current % st->sentinels.nelts];

    st->last = ngx_current_msec;

    /* connected when needed, kept while it answers */
    ngx_http_redis_ratelimit_node_connect(node);

    st->generation++;

    if (ngx_http_redis_ratelimit_command(node,
                                  ngx_http_redis_ratelimit_sentinel_reply,
                                  (void *) st->generation,
                                  "SENTINEL get-master-addr-by-name %b",
                                  rmcf->sentinel_name.data,
                                  rmcf->sentinel_name.len)
        != NGX_OK)
    {
        st->current++;
        ngx_http_redis_ratelimit_sentinel_retry();
        return;
    }

    st->asking = 1;

    ngx_add_timer(&st->timer, rmcf->connect_timeout + rmcf->timeout);
}


static void
ngx_http_redis_ratelimit_sentinel_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_node_t      **sentinels;
    ngx_http_redis_ratelimit_sentinel_t   *st = ev->data;

    if (!st->asking) {
        /* the delay before asking again is over, or the next poll is due */
        st->polling = 0;
        ngx_http_redis_ratelimit_sentinel_ask();
        return;
    }

    sentinels = st->sentinels.elts;

    ngx_http_redis_ratelimit_log_failure(ev->log,
                                  "redis_ratelimit: sentinel %V did not "
                                  "answer in time",
                                  &sentinels[st->current
                                             % st->sentinels.nelts]->name);

    /* a late answer is ignored */
    st->generation++;
    st->asking = 0;
    st->current++;

    ngx_http_redis_ratelimit_sentinel_retry();
}


static void
ngx_http_redis_ratelimit_sentinel_retry(void)
{
    ngx_msec_t                            delay;
    ngx_http_redis_ratelimit_sentinel_t  *st;

    st = &ngx_http_redis_ratelimit_sentinel;

    if (ngx_http_redis_ratelimit_link.exiting || st->timer.timer_set) {
        return;
    }

    st->failures++;
    st->again = 0;

    /* each sentinel once quickly, then slower */
    delay = (st->failures <= st->sentinels.nelts)
            ? NGX_HTTP_REDIS_RATELIMIT_ASK_MIN
            : NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY;

    ngx_add_timer(&st->timer, delay);
}


static void
ngx_http_redis_ratelimit_sentinel_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    int                                    rc;
    size_t                                 len;
    unsigned                               port;
    ngx_pool_t                            *pool;
    redisReply                            *rr = reply;
    rrl_value_t                           *value;
    ngx_http_redis_ratelimit_node_t       *sentinel, *node, *old;
    ngx_http_redis_ratelimit_link_t       *link;
    ngx_http_redis_ratelimit_sentinel_t   *st;
    char                                   host[RRL_HOST_MAX];
    u_char                                 text[256];

    st = &ngx_http_redis_ratelimit_sentinel;
    link = &ngx_http_redis_ratelimit_link;
    sentinel = ac->ev.data;

    if ((uintptr_t) privdata != st->generation || !st->asking) {
        return;
    }

    st->asking = 0;

    if (st->timer.timer_set) {
        ngx_del_timer(&st->timer);
    }

    if (rr == NULL || rr->type == REDIS_REPLY_ERROR) {
        /* an error's text escaped: a hostile server forges no log line */
        len = rr ? rrl_printable((char *) text, sizeof(text),
                                 (u_char *) rr->str, rr->len)
                 : (size_t) (ngx_cpystrn(text, (u_char *) "no reply",
                                         sizeof(text))
                             - text);

        ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V failed: %*s",
                                  &sentinel->name, len, text);
        goto next;
    }

    pool = ngx_create_pool(1024, sentinel->log);
    if (pool == NULL) {
        goto next;
    }

    value = ngx_http_redis_ratelimit_value(pool, rr);

    rc = (value == NULL) ? RRL_ERROR
                         : rrl_sentinel_addr_parse(value, host, &port);

    ngx_destroy_pool(pool);

    if (rc == RRL_UNKNOWN) {
        ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V does not "
                                  "know \"%V\"", &sentinel->name,
                                  &link->conf->sentinel_name);
        goto next;
    }

    if (rc != RRL_OK) {
        /* the core has logged what was wrong */
        goto next;
    }

    if (!ngx_http_redis_ratelimit_numeric(host)) {
        ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V names the "
                                  "primary by \"%s\", not by a numeric "
                                  "address", &sentinel->name, host);
        goto next;
    }

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             (u_char *) host,
                                             (in_port_t) port, NULL);
    if (node == NULL) {
        goto next;
    }

    st->failures = 0;

    old = link->primary;

    if (node != old) {
        ngx_log_error((old ? NGX_LOG_WARN : NGX_LOG_INFO), sentinel->log, 0,
                      "redis_ratelimit: sentinel %V: the primary of \"%V\" "
                      "is %V", &sentinel->name, &link->conf->sentinel_name,
                      &node->name);

        link->primary = node;
        ngx_http_redis_ratelimit_node_use(node, 1);

        if (old) {
            ngx_http_redis_ratelimit_node_use(old, 0);
        }

    } else {
        ngx_http_redis_ratelimit_node_use(node, 1);
    }

    if (st->again) {
        /* a failure came meanwhile: the answer may be older than it */
        st->again = 0;
        ngx_http_redis_ratelimit_sentinel_ask();

    } else if (!st->timer.timer_set) {
        st->polling = 1;
        ngx_add_timer(&st->timer, NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY);
    }

    return;

next:

    st->current++;
    ngx_http_redis_ratelimit_sentinel_retry();
}
