
/*
 * A node: one hiredis async connection to one Redis (or Sentinel) address,
 * set up by the core's handshake plan, reconnected with the core's backoff
 * while it is in use, with its own circuit breaker; and the registry of a
 * worker's nodes. The link learns of a lost connection by its lost handler.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_node.h"
#include "rrl_backoff.h"
#include "rrl_handshake.h"
#include "rrl_node_use.h"


/* a worker's nodes at most; the room of each for any address's names */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_NODES  1024
#define NGX_HTTP_REDIS_RATELIMIT_NODE_ROOM                                    \
    (2 * RRL_HOST_MAX + sizeof("unix::65535"))


typedef struct {
    ngx_http_redis_ratelimit_main_conf_t  *conf;
    ngx_log_t                             *log;
    ngx_queue_t                           *nodes;     /* the link's list */
    ngx_uint_t                             nnodes;
    ngx_http_redis_ratelimit_lost_pt       lost;
    rrl_handshake_t                        setup[2];  /* by role */
    unsigned                               exiting:1;
} ngx_http_redis_ratelimit_nodes_t;


static void ngx_http_redis_ratelimit_setup(
    ngx_http_redis_ratelimit_node_t *node, int step);
static void ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static void ngx_http_redis_ratelimit_on_connect(const redisAsyncContext *ac,
    int status);
static void ngx_http_redis_ratelimit_closed(
    ngx_http_redis_ratelimit_node_t *node, const char *reason);
static void ngx_http_redis_ratelimit_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_node_state(
    ngx_http_redis_ratelimit_node_t *node, rrl_node_use_t *u);


static ngx_http_redis_ratelimit_nodes_t  ngx_http_redis_ratelimit_nodes;


void
ngx_http_redis_ratelimit_node_init(ngx_http_redis_ratelimit_main_conf_t *conf,
    ngx_log_t *log, ngx_queue_t *nodes, ngx_http_redis_ratelimit_lost_pt lost)
{
    ngx_http_redis_ratelimit_nodes_t  *ns = &ngx_http_redis_ratelimit_nodes;

    ngx_memzero(ns, sizeof(ngx_http_redis_ratelimit_nodes_t));

    ns->conf = conf;
    ns->log = log;
    ns->nodes = nodes;
    ns->lost = lost;

    rrl_handshake_init(&ns->setup[NGX_HTTP_REDIS_RATELIMIT_DATA], 0,
                       (char *) conf->username.data, conf->username.len,
                       (char *) conf->password.data, conf->password.len,
                       (uint64_t) conf->db);
    rrl_handshake_init(&ns->setup[NGX_HTTP_REDIS_RATELIMIT_SENTINEL], 1,
                       NULL, 0, (char *) conf->sentinel_password.data,
                       conf->sentinel_password.len, 0);

    ngx_queue_init(nodes);
}


void
ngx_http_redis_ratelimit_node_exit(void)
{
    ngx_queue_t                      *q;
    ngx_http_redis_ratelimit_node_t  *node;

    ngx_http_redis_ratelimit_nodes.exiting = 1;

    for (q = ngx_queue_head(ngx_http_redis_ratelimit_nodes.nodes);
         q != ngx_queue_sentinel(ngx_http_redis_ratelimit_nodes.nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        /* no reconnect; not closed as idle while exiting: freed here */
        ngx_http_redis_ratelimit_node_use(node, 0);

        if (node->ac) {
            /* fails pending callbacks, then the cleanup hook: no retry */
            redisAsyncFree(node->ac);
        }
    }
}


/*
 * The node of an address, made on first use, or taking over a node out of
 * use (rrl_node_free()): nodes are never freed while the worker runs, and
 * it keeps at most NGX_HTTP_REDIS_RATELIMIT_MAX_NODES: a cluster or a
 * Sentinel naming ever new addresses does not grow it without bound.
 */

ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_node_get(ngx_uint_t role, u_char *host,
    in_port_t port, u_char *unix_path)
{
    u_char                            *p, *addr;
    size_t                             len;
    ngx_queue_t                       *q;
    rrl_node_use_t                     u;
    ngx_http_redis_ratelimit_node_t   *node, *unused;
    ngx_http_redis_ratelimit_nodes_t  *ns = &ngx_http_redis_ratelimit_nodes;

    addr = unix_path ? unix_path : host;
    len = ngx_strlen(addr);

    if (len >= RRL_HOST_MAX
        || (unix_path == NULL
            && !ngx_http_redis_ratelimit_numeric((char *) host)))
    {
        /* hiredis would resolve a name, blocking the worker */
        return NULL;
    }

    unused = NULL;

    for (q = ngx_queue_head(ns->nodes);
         q != ngx_queue_sentinel(ns->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->role == role && (node->unix_path == NULL) == !unix_path
            && (unix_path || node->port == port)
            && ngx_strcmp((node->unix_path ? node->unix_path : node->host),
                          addr) == 0)
        {
            return node;
        }

        ngx_http_redis_ratelimit_node_state(node, &u);

        if (unused == NULL && rrl_node_free(&u)) {
            unused = node;
        }
    }

    node = unused;

    if (node) {
        ngx_queue_remove(&node->queue);

    } else if (ns->nnodes >= NGX_HTTP_REDIS_RATELIMIT_MAX_NODES) {
        ngx_http_redis_ratelimit_log_failure(ns->log,
                                     "redis_ratelimit: %ui addresses in use, "
                                     "none idle: %s:%d is not connected",
                                     ns->nnodes, addr, (int) port);
        return NULL;

    } else {
        /* room for any address: the node may serve another */
        node = ngx_alloc(sizeof(ngx_http_redis_ratelimit_node_t)
                         + NGX_HTTP_REDIS_RATELIMIT_NODE_ROOM, ns->log);
        if (node == NULL) {
            return NULL;
        }

        ns->nnodes++;
    }

    ngx_memzero(node, sizeof(ngx_http_redis_ratelimit_node_t)
                      + NGX_HTTP_REDIS_RATELIMIT_NODE_ROOM);

    rrl_breaker_init(&node->breaker, ns->conf->max_failures,
                     (int64_t) ns->conf->cooldown);

    p = (u_char *) &node[1];

    if (unix_path) {
        node->unix_path = p;
        p = ngx_cpymem(p, unix_path, len + 1);
        node->name.data = p;
        node->name.len = ngx_sprintf(p, "unix:%s", unix_path) - p;

    } else {
        node->host = p;
        p = ngx_cpymem(p, host, len + 1);
        node->port = port;
        node->name.data = p;
        node->name.len = ngx_sprintf(p, "%s:%d", host, (int) port) - p;
    }

    node->role = role;
    node->log = ns->log;

    node->connect_timer.handler = ngx_http_redis_ratelimit_timer_handler;
    node->connect_timer.data = node;
    node->connect_timer.log = ns->log;
    node->connect_timer.cancelable = 1;
    node->reconnect_timer = node->connect_timer;

    ngx_queue_insert_tail(ns->nodes, &node->queue);

    return node;
}


void
ngx_http_redis_ratelimit_node_use(ngx_http_redis_ratelimit_node_t *node,
    ngx_uint_t use)
{
    if (use) {
        node->reconnect = 1;
        node->used = 1;

        if (node->ac == NULL && !node->reconnect_timer.timer_set) {
            ngx_http_redis_ratelimit_node_connect(node);
        }

        return;
    }

    node->reconnect = 0;

    if (node->reconnect_timer.timer_set) {
        ngx_del_timer(&node->reconnect_timer);
    }

    ngx_http_redis_ratelimit_node_idle(node);
}


/* a node out of use closes once no call waits on it */

void
ngx_http_redis_ratelimit_node_idle(ngx_http_redis_ratelimit_node_t *node)
{
    rrl_node_use_t  u;

    ngx_http_redis_ratelimit_node_state(node, &u);

    if (rrl_node_idle(&u)) {
        ngx_log_error(NGX_LOG_INFO, node->log, 0,
                      "redis_ratelimit: %V is no more in use, closing",
                      &node->name);

        node->dropping = 1;

        /* inside a hiredis callback, the free is deferred to its end */
        redisAsyncFree(node->ac);
    }
}


void
ngx_http_redis_ratelimit_node_connect(ngx_http_redis_ratelimit_node_t *node)
{
    int                 steps[RRL_HANDSHAKE_MAX];
    size_t              i, n;
    redisAsyncContext  *ac;

    if (node->ac || ngx_http_redis_ratelimit_nodes.exiting || ngx_exiting
        || ngx_terminate || ngx_quit)
    {
        return;
    }

    if (node->reconnect_timer.timer_set) {
        ngx_del_timer(&node->reconnect_timer);
    }

    /* the address is numeric (resolved at configuration): no DNS here */
    ac = node->unix_path ? redisAsyncConnectUnix((char *) node->unix_path)
                         : redisAsyncConnect((char *) node->host, node->port);

    if (ac == NULL || ac->err) {
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: cannot connect to %V: "
                                     "%s", &node->name,
                                     ac ? ac->errstr : "out of memory");
        goto failed;
    }

    if (ngx_http_redis_ratelimit_attach(node, ac,
                                        ngx_http_redis_ratelimit_closed)
        != NGX_OK)
    {
        goto failed;
    }

    node->connected = 0;
    node->dropping = 0;

    redisAsyncSetConnectCallback(ac, ngx_http_redis_ratelimit_on_connect);

    /* queued now, written as soon as the connection is up */

    n = rrl_handshake_plan(&ngx_http_redis_ratelimit_nodes.setup[node->role],
                           steps);

    for (i = 0; i < n; i++) {
        ngx_http_redis_ratelimit_setup(node, steps[i]);
    }

    ngx_add_timer(&node->connect_timer,
                  ngx_http_redis_ratelimit_nodes.conf->connect_timeout);

    return;

failed:

    if (ac) {
        redisAsyncFree(ac);
    }

    ngx_http_redis_ratelimit_closed(node, NULL);
}


/* a step of the core's handshake plan */

static void
ngx_http_redis_ratelimit_setup(ngx_http_redis_ratelimit_node_t *node,
    int step)
{
    size_t       argc, argvlen[RRL_HANDSHAKE_ARGS];
    const char  *argv[RRL_HANDSHAKE_ARGS];

    if (step == RRL_HANDSHAKE_READY) {
        /* a connection that works: a next failure backs off from the start */
        node->backoff = 0;
        return;
    }

    argc = rrl_handshake_command(
                     &ngx_http_redis_ratelimit_nodes.setup[node->role], step,
                     argv, argvlen);

    if (argc) {
        (void) ngx_http_redis_ratelimit_command_argv(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         (void *) (uintptr_t) step,
                                         (int) argc, argv, argvlen);
    }
}


static void
ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    int                               step = (int) (uintptr_t) privdata;
    size_t                            len;
    redisReply                       *rr = reply;
    ngx_http_redis_ratelimit_node_t  *node = ac->ev.data;
    u_char                            text[256];

    if (rr == NULL || node == NULL) {
        return;
    }

    if (rr->type == REDIS_REPLY_ERROR) {
        len = rrl_printable((char *) text, sizeof(text),
                            (u_char *) rr->str, rr->len);
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: %s on %V failed: %*s",
                                     rrl_handshake_name(step), &node->name,
                                     len, text);
        return;
    }

    ngx_http_redis_ratelimit_setup(node, rrl_handshake_next(
                     &ngx_http_redis_ratelimit_nodes.setup[node->role], step));
}


static void
ngx_http_redis_ratelimit_on_connect(const redisAsyncContext *ac, int status)
{
    ngx_http_redis_ratelimit_node_t  *node = ac->ev.data;

    if (status != REDIS_OK) {
        /* hiredis frees the context next: the cleanup hook logs and retries */
        return;
    }

    if (node->connect_timer.timer_set) {
        ngx_del_timer(&node->connect_timer);
    }

    node->connected = 1;

    ngx_http_redis_ratelimit_setup(node, rrl_handshake_next(
                     &ngx_http_redis_ratelimit_nodes.setup[node->role],
                     RRL_HANDSHAKE_CONNECTED));

    ngx_log_error(NGX_LOG_INFO, node->log, 0,
                  "redis_ratelimit: connected to %V", &node->name);
}


/*
 * The context is gone (reason: from the adapter's cleanup hook) or was
 * never made (NULL, logged already): retry with backoff if still in use.
 */

static void
ngx_http_redis_ratelimit_closed(ngx_http_redis_ratelimit_node_t *node,
    const char *reason)
{
    int             what;
    rrl_node_use_t  u;

    if (node->connect_timer.timer_set) {
        ngx_del_timer(&node->connect_timer);
    }

    ngx_http_redis_ratelimit_node_state(node, &u);
    what = rrl_node_closed(&u);

    if (reason && (what & RRL_NODE_LOST)) {
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: connection to %V "
                                     "%s: %s", &node->name,
                                     node->connected ? "lost" : "failed",
                                     reason);
    }

    node->connected = 0;
    node->dropping = 0;

    if (what & RRL_NODE_RETRY) {
        /* jitter: a fleet's workers do not reconnect in step */
        ngx_add_timer(&node->reconnect_timer,
                      (ngx_msec_t) rrl_backoff_next(&node->backoff,
                                                    (uint64_t) ngx_random()));
    }

    if (what & RRL_NODE_LOST) {
        ngx_http_redis_ratelimit_nodes.lost(node);
    }
}


/* the reconnect timer connects again; the connect timer gives up */

static void
ngx_http_redis_ratelimit_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_node_t  *node = ev->data;

    if (ev == &node->reconnect_timer) {
        if (node->reconnect) {
            ngx_http_redis_ratelimit_node_connect(node);
        }

        return;
    }

    ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: connecting to %V "
                                     "timed out", &node->name);

    if (node->ac) {
        /* fails the queued calls; the cleanup hook schedules a retry */
        redisAsyncFree(node->ac);
    }
}


/*
 * The circuit breaker, one a node: the core's state machine (breaker.hpp),
 * on the monotonic clock in ms (ngx_current_msec wraps on 32 bits). Here:
 * its log lines, and a stuck connection dropped when it opens.
 */

ngx_int_t
ngx_http_redis_ratelimit_circuit_allows(ngx_http_redis_ratelimit_node_t *node)
{
    return rrl_breaker_allow(&node->breaker,
                             ngx_http_redis_ratelimit_clock() / 1000);
}


void
ngx_http_redis_ratelimit_circuit_abandon(ngx_http_redis_ratelimit_node_t *node)
{
    rrl_breaker_abandon(&node->breaker);
}


void
ngx_http_redis_ratelimit_circuit_outcome(ngx_http_redis_ratelimit_node_t *node,
    ngx_uint_t ok)
{
    rrl_node_use_t                         u;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_redis_ratelimit_nodes.conf;

    if (ok) {
        if (rrl_breaker_success(&node->breaker) == RRL_BREAKER_CLOSED_AGAIN) {
            ngx_log_error(NGX_LOG_WARN, node->log, 0,
                          "redis_ratelimit: %V answers again, circuit closed",
                          &node->name);
        }

        return;
    }

    if (rrl_breaker_failure(&node->breaker,
                            ngx_http_redis_ratelimit_clock() / 1000)
        == RRL_BREAKER_OPENED)
    {
        ngx_log_error(NGX_LOG_WARN, node->log, 0,
                      "redis_ratelimit: %uL failures in a row on %V, "
                      "circuit open: the fail mode answers, a probe every %M ms",
                      node->breaker.failures, &node->name, rmcf->cooldown);
    }

    ngx_http_redis_ratelimit_node_state(node, &u);

    if (rrl_node_stuck(&u, node->breaker.state == RRL_BREAKER_OPEN,
                       (ngx_msec_t) (ngx_current_msec - node->last_read),
                       rmcf->timeout))
    {
        /*
         * a blackholed server: start afresh, which also frees what hiredis
         * holds for the calls (their failures come back here while the
         * context is being freed)
         */
        node->dropping = 1;
        redisAsyncFree(node->ac);
    }
}


/* what the core's rules of a node's use (rrl_node_use.h) look at */

static void
ngx_http_redis_ratelimit_node_state(ngx_http_redis_ratelimit_node_t *node,
    rrl_node_use_t *u)
{
    u->data = (node->role == NGX_HTTP_REDIS_RATELIMIT_DATA);
    u->context = (node->ac != NULL);
    u->timer = (node->connect_timer.timer_set
                || node->reconnect_timer.timer_set);
    u->reconnect = node->reconnect;
    u->used = node->used;
    u->mapped = node->mapped;
    u->dropping = node->dropping;
    u->exiting = ngx_http_redis_ratelimit_nodes.exiting;
    u->quitting = (ngx_exiting || ngx_terminate || ngx_quit);
    u->in_flight = node->in_flight;
    u->batches = node->batches;
}
