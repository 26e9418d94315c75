
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
#include "ngx_http_redis_ratelimit_topology.h"
#include "rrl_primary.h"


#define NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY  1000   /* ms */


typedef struct {
    rrl_primary_t                primary;     /* the node named */
    ngx_http_redis_ratelimit_main_conf_t  *conf;
} ngx_http_redis_ratelimit_sentinel_t;


static ngx_http_redis_ratelimit_node_t *
    ngx_http_redis_ratelimit_sentinel_target(rrl_refresher_t *refresher,
    ngx_http_redis_ratelimit_node_t *asked);
static ngx_int_t ngx_http_redis_ratelimit_sentinel_answer(
    ngx_http_redis_ratelimit_node_t *sentinel, rrl_value_t *value,
    ngx_pool_t *pool, char *why);


static ngx_http_redis_ratelimit_sentinel_t  ngx_http_redis_ratelimit_sentinel;


ngx_int_t
ngx_http_redis_ratelimit_sentinel_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    rrl_refresher_conf_t                   conf;
    ngx_http_redis_ratelimit_sentinel_t   *st;
    ngx_http_redis_ratelimit_question_t    question = {
        "sentinel", "did not answer in time", 3,
        { "SENTINEL", "get-master-addr-by-name",
          (char *) rmcf->sentinel_name.data },
        { sizeof("SENTINEL") - 1, sizeof("get-master-addr-by-name") - 1,
          rmcf->sentinel_name.len },
        ngx_http_redis_ratelimit_sentinel_target,
        ngx_http_redis_ratelimit_sentinel_answer
    };

    st = &ngx_http_redis_ratelimit_sentinel;

    ngx_memzero(st, sizeof(ngx_http_redis_ratelimit_sentinel_t));
    ngx_memzero(&conf, sizeof(rrl_refresher_conf_t));

    /* each sentinel once quickly, then slower; the next after a failure */
    conf.quick = rmcf->addrs.nelts;
    conf.poll_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_EVERY;
    conf.rotate = 1;

    ngx_http_redis_ratelimit_topology_init(cycle->log, rmcf, &conf, &question);

    st->conf = rmcf;

    ngx_http_redis_ratelimit_sentinel_ask();

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_sentinel_exit(void)
{
    ngx_http_redis_ratelimit_topology_exit();
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
    /* NULL: not in Sentinel mode */

    if (ngx_http_redis_ratelimit_sentinel.conf) {
        ngx_http_redis_ratelimit_topology_want();
    }
}


/*
 * The sentinel of the turn; connected when needed, kept while it answers
 * (a sentinel's node is never taken over by another address).
 */

static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_sentinel_target(rrl_refresher_t *refresher,
    ngx_http_redis_ratelimit_node_t *asked)
{
    ngx_array_t                      *addrs;
    ngx_http_redis_ratelimit_addr_t  *addr;
    ngx_http_redis_ratelimit_node_t  *node;

    addrs = &ngx_http_redis_ratelimit_sentinel.conf->addrs;
    addr = addrs->elts;
    addr = &addr[rrl_refresher_target(refresher, addrs->nelts, 0)];

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_SENTINEL,
                                             addr->host, addr->port,
                                             addr->unix_path);
    if (node) {
        ngx_http_redis_ratelimit_node_connect(node);
    }

    return node;
}


static ngx_int_t
ngx_http_redis_ratelimit_sentinel_answer(
    ngx_http_redis_ratelimit_node_t *sentinel, rrl_value_t *value,
    ngx_pool_t *pool, char *why)
{
    int                                    rc;
    void                                  *previous;
    unsigned                               port;
    ngx_http_redis_ratelimit_node_t       *node, *old;
    ngx_http_redis_ratelimit_sentinel_t   *st;
    char                                   host[RRL_HOST_MAX];

    st = &ngx_http_redis_ratelimit_sentinel;

    if (rrl_sentinel_answer(value, (char *) st->conf->sentinel_name.data,
                            st->conf->sentinel_name.len, host, &port, why)
        != RRL_OK)
    {
        return NGX_ERROR;
    }

    if (!ngx_http_redis_ratelimit_numeric(host)) {
        ngx_http_redis_ratelimit_log_failure(sentinel->log,
                                  "redis_ratelimit: sentinel %V names the "
                                  "primary by \"%s\", not by a numeric "
                                  "address", &sentinel->name, host);
        return NGX_ERROR;
    }

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             (u_char *) host,
                                             (in_port_t) port, NULL);
    if (node == NULL) {
        return NGX_ERROR;
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

    return NGX_OK;
}
