
/*
 * The per-worker Redis link: the script calls of requests, routed to a
 * node (the server, the primary a Sentinel names, or in a Cluster the
 * primary of the keys' slot, one part per slot), each request's parts under
 * one timeout; they outlive their request if the client goes away. The
 * core keeps each call's parts and their state (rrl_call_*); the parts go
 * to Redis in batches (batch.c), that tell of them through handlers here.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_link.h"
#include "ngx_http_redis_ratelimit_batch.h"
#include "rrl_metrics_count.h"


#define ngx_http_redis_ratelimit_part_node(call, i)                           \
    ((ngx_http_redis_ratelimit_node_t *) rrl_call_node((call)->parts, i))


/* this worker's link */
typedef struct {
    ngx_http_redis_ratelimit_main_conf_t  *conf;
    ngx_log_t                   *log;
    ngx_queue_t                  nodes;       /* every node; node.c fills it */
    ngx_uint_t                   parked;      /* calls with a request */
    unsigned                     exiting:1;

    /* one server (Sentinel's and Cluster's are theirs) */
    ngx_http_redis_ratelimit_node_t   *primary;
} ngx_http_redis_ratelimit_link_t;


struct ngx_http_redis_ratelimit_call_s {
    ngx_http_request_t          *request;     /* NULL once detached */
    ngx_http_redis_ratelimit_ctx_t   *ctx;
    ngx_http_redis_ratelimit_done_pt  done;
    rrl_call_t                  *parts;       /* its data: the call */
    ngx_event_t                  timer;       /* command timeout */
    ngx_event_t                  finish;      /* posted on the last reply */
    unsigned                     held:1;      /* not to be freed now */
};


static void ngx_http_redis_ratelimit_link_gauges(rrl_metrics_t *m);
static void ngx_http_redis_ratelimit_node_lost(
    ngx_http_redis_ratelimit_node_t *node);
static ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_route(
    ngx_uint_t slot);
static ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_redirect(
    ngx_http_redis_ratelimit_node_t *from, ngx_uint_t kind, ngx_uint_t slot,
    u_char *host, in_port_t port);
static void ngx_http_redis_ratelimit_ask(ngx_uint_t who);
static void ngx_http_redis_ratelimit_part_answered(rrl_call_t *parts,
    ngx_uint_t part, u_char *error, size_t len);
static void ngx_http_redis_ratelimit_call_out(rrl_call_t *parts);
static void ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_call_probe_timeout(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_failures(
    ngx_http_redis_ratelimit_call_t *call,
    int (*fails)(rrl_call_t *parts, size_t part));
static void ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_release(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_free(
    ngx_http_redis_ratelimit_call_t *call);


static ngx_http_redis_ratelimit_link_t  ngx_http_redis_ratelimit_link;

static ngx_http_redis_ratelimit_batch_handlers_t
    ngx_http_redis_ratelimit_batch_handlers = {
    ngx_http_redis_ratelimit_part_answered,
    ngx_http_redis_ratelimit_call_out,
    ngx_http_redis_ratelimit_redirect,
    ngx_http_redis_ratelimit_ask
};


ngx_int_t
ngx_http_redis_ratelimit_link_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    ngx_http_redis_ratelimit_addr_t  *addr;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    ngx_memzero(link, sizeof(ngx_http_redis_ratelimit_link_t));

    link->conf = rmcf;
    link->log = cycle->log;
    ngx_http_redis_ratelimit_node_init(rmcf, cycle->log, &link->nodes,
                                       ngx_http_redis_ratelimit_node_lost);

    if (ngx_http_redis_ratelimit_batch_init(cycle->log, &link->nodes,
                                &rmcf->script_sha1,
                                &ngx_http_redis_ratelimit_batch_handlers)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* metrics: this worker's gauges */
    ngx_http_redis_ratelimit_metrics_gauges(
                                         ngx_http_redis_ratelimit_link_gauges);

    switch (rmcf->mode) {

    case NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER:
        return ngx_http_redis_ratelimit_cluster_init(cycle, rmcf, &link->nodes);

    case NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL:
        return ngx_http_redis_ratelimit_sentinel_init(cycle, rmcf);

    default:
        addr = rmcf->addrs.elts;

        link->primary = ngx_http_redis_ratelimit_node_get(
                                         NGX_HTTP_REDIS_RATELIMIT_DATA,
                                         addr->host, addr->port,
                                         addr->unix_path);
        if (link->primary == NULL) {
            return NGX_ERROR;
        }

        ngx_http_redis_ratelimit_node_use(link->primary, 1);

        return NGX_OK;
    }
}


void
ngx_http_redis_ratelimit_link_exit(void)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->conf == NULL) {
        return;
    }

    link->exiting = 1;

    ngx_http_redis_ratelimit_batch_exit();
    ngx_http_redis_ratelimit_cluster_exit();
    ngx_http_redis_ratelimit_sentinel_exit();
    ngx_http_redis_ratelimit_node_exit();
}


/* this worker's gauges: parked requests, and its nodes of limits in use */

static void
ngx_http_redis_ratelimit_link_gauges(rrl_metrics_t *m)
{
    ngx_queue_t                      *q;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    m->parked = link->parked;

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->role == NGX_HTTP_REDIS_RATELIMIT_DATA && node->reconnect) {
            rrl_metrics_gauge_node(m, node->ac && node->connected,
                                   node->breaker.state);
        }
    }
}


/* a node's connection is lost, or could not be made (node.c calls up) */

static void
ngx_http_redis_ratelimit_node_lost(ngx_http_redis_ratelimit_node_t *node)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->exiting || node->role != NGX_HTTP_REDIS_RATELIMIT_DATA
        || !node->reconnect)
    {
        return;
    }

    /* a primary gone may have been replaced: ask who serves now */

    if (link->conf->mode == NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER) {
        ngx_http_redis_ratelimit_ask(RRL_RETRY_ASK_CLUSTER);

    } else if (node == ngx_http_redis_ratelimit_sentinel_primary()) {
        ngx_http_redis_ratelimit_ask(RRL_RETRY_ASK_SENTINEL);
    }
}


/* script calls */

ngx_http_redis_ratelimit_call_t *
ngx_http_redis_ratelimit_call(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_http_redis_ratelimit_done_pt done)
{
    ngx_uint_t                        i, nparts;
    const void                      **zones;
    ngx_http_redis_ratelimit_call_t  *call;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->parked >= link->conf->max_parked) {
        /* a stalled Redis must not pile up requests without bound */
        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: %ui requests already "
                                     "wait for %V", link->parked,
                                     &link->conf->server);
        ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_MAX_PARKED);
        return NULL;
    }

    zones = ngx_palloc(r->pool, ctx->nlimits * sizeof(void *));

    /* not in r->pool: hiredis may outlive it */
    call = ngx_calloc(sizeof(ngx_http_redis_ratelimit_call_t),
                      r->connection->log);

    if (zones == NULL || call == NULL) {
        goto failed;
    }

    for (i = 0; i < ctx->nlimits; i++) {
        zones[i] = ctx->limits[i]->zone;
    }

    call->parts = rrl_call_new(ctx->argc, ctx->argv, ctx->argvlen, zones,
                               ctx->nlimits, link->conf->mode
                               == NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER);
    if (call->parts == NULL) {
        goto failed;
    }

    rrl_call_set_data(call->parts, call);

    nparts = rrl_call_parts(call->parts);

    /* every part must have somewhere to go, or none is sent */

    for (i = 0; i < nparts; i++) {
        node = ngx_http_redis_ratelimit_route(rrl_call_slot(call->parts, i));

        if (node == NULL || node->ac == NULL) {
            ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: no connection to %V",
                                     node ? &node->name : &link->conf->server);
            ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);
            goto failed;
        }

        rrl_call_set_node(call->parts, i, node);
    }

    for (i = 0; i < nparts; i++) {
        if (!rrl_call_asks(call->parts, i)) {
            continue;
        }

        switch (ngx_http_redis_ratelimit_circuit_allows(
                                  ngx_http_redis_ratelimit_part_node(call, i)))
        {
        case RRL_BREAKER_PROBE:
            rrl_call_set_probe(call->parts, i);
            break;

        case RRL_BREAKER_REFUSE:
            while (i--) {
                /* the probes granted to the call: not made */
                if (rrl_call_probe(call->parts, i)) {
                    ngx_http_redis_ratelimit_circuit_abandon(
                                  ngx_http_redis_ratelimit_part_node(call, i));
                }
            }

            ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CIRCUIT_OPEN);
            goto failed;
        }
    }

    call->request = r;
    call->ctx = ctx;
    call->done = done;

    call->timer.handler = ngx_http_redis_ratelimit_call_timeout_handler;
    call->timer.data = call;
    call->timer.log = r->connection->log;

    call->finish.handler = ngx_http_redis_ratelimit_call_finish_handler;
    call->finish.data = call;
    call->finish.log = r->connection->log;

    for (i = 0; i < nparts; i++) {
        if (ngx_http_redis_ratelimit_batch_add(call->parts, i) != NGX_OK) {
            ngx_http_redis_ratelimit_part_answered(call->parts, i,
                                                   (u_char *) "no memory",
                                                   sizeof("no memory") - 1);
        }
    }

    link->parked++;

    /* not cancelable: a graceful shutdown waits for parked requests */
    ngx_add_timer(&call->timer, link->conf->timeout);

    return call;

failed:

    if (call) {
        rrl_call_free(call->parts);
        ngx_free(call);
    }

    return NULL;
}


static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_route(ngx_uint_t slot)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    switch (link->conf->mode) {

    case NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER:
        return ngx_http_redis_ratelimit_cluster_node(slot);

    case NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL:
        return ngx_http_redis_ratelimit_sentinel_primary();

    default:
        return link->primary;
    }
}


/*
 * MOVED: the slot has a new primary for good; the map is refreshed, and the
 * batch goes there now. ASK: the keys are being migrated; this batch alone
 * goes to the target (batch.c sends ASKING).
 */

static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_redirect(ngx_http_redis_ratelimit_node_t *from,
    ngx_uint_t kind, ngx_uint_t slot, u_char *host, in_port_t port)
{
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->conf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER) {
        return NULL;
    }

    if (!ngx_http_redis_ratelimit_numeric((char *) host)) {
        /*
         * a name (cluster-preferred-endpoint-type hostname): a worker never
         * resolves; the batch fails, and its answer refreshes the map
         */
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: %s from %V names "
                                     "\"%s\", not a numeric address",
                                     kind == RRL_REPLY_MOVED ? "MOVED" : "ASK",
                                     &from->name, host);
        return NULL;
    }

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             host, port, NULL);
    if (node == NULL) {
        return NULL;
    }

    if (kind == RRL_REPLY_MOVED) {
        ngx_http_redis_ratelimit_cluster_moved(slot, node);

    } else if (node->ac == NULL) {
        /* a node not (yet) in the map: it is connected for this call */
        node->used = 1;
        ngx_http_redis_ratelimit_node_connect(node);
    }

    return node->ac ? node : NULL;
}


/* a node lost, or an error reply: who serves now is asked */

static void
ngx_http_redis_ratelimit_ask(ngx_uint_t who)
{
    switch (who) {

    case RRL_RETRY_ASK_SENTINEL:
        /* not, or no more, the primary */
        if (ngx_http_redis_ratelimit_link.conf->mode
            == NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL)
        {
            ngx_http_redis_ratelimit_sentinel_ask();
        }

        break;

    case RRL_RETRY_ASK_CLUSTER:
        ngx_http_redis_ratelimit_cluster_refresh();
        break;
    }
}


/* a part's reply is in, or it failed (error): the call finishes on its last */

static void
ngx_http_redis_ratelimit_part_answered(rrl_call_t *parts, ngx_uint_t part,
    u_char *error, size_t len)
{
    ngx_http_redis_ratelimit_call_t    *call = rrl_call_data(parts);
    ngx_http_redis_ratelimit_result_t  *result = &call->ctx->result;

    if (error && result->node == NULL) {
        /* the first failure tells */
        result->error_len = ngx_min(len, sizeof(result->error));
        ngx_memcpy(result->error, error, result->error_len);
        result->node = &ngx_http_redis_ratelimit_part_node(call, part)->name;
    }

    if (rrl_call_answer(parts, part) == 0) {
        /* resume the request from the event loop, not from inside hiredis */
        ngx_post_event(&call->finish, &ngx_posted_events);
    }
}


/*
 * A part nobody waits for any more left its batch: its request went away
 * (and its arguments with the request's pool) or timed out; the call of a
 * request gone is freed with its last part.
 */

static void
ngx_http_redis_ratelimit_call_out(rrl_call_t *parts)
{
    ngx_http_redis_ratelimit_call_t  *call = rrl_call_data(parts);

    if (call->request == NULL && !call->held
        && rrl_call_in_batches(parts) == 0)
    {
        ngx_http_redis_ratelimit_call_free(call);
    }
}


static void
ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_uint_t                          i;
    ngx_http_redis_ratelimit_result_t  *result;

    if (call->request == NULL) {
        ngx_http_redis_ratelimit_call_probe_timeout(call);
        return;
    }

    if (rrl_call_pending(call->parts) == 0) {
        /*
         * every part was answered in this turn, before the timers ran:
         * the finish posted then decides, and no timeout is counted
         */
        return;
    }

    result = &call->ctx->result;

    /* every part answered: a stuck connection dropped cannot touch it */
    i = rrl_call_time_out(call->parts);

    if (result->node == NULL) {
        result->error_len = ngx_sprintf(result->error,
                                        "timed out after %M ms",
                                        ngx_http_redis_ratelimit_link
                                        .conf->timeout)
                            - result->error;
        result->node = &ngx_http_redis_ratelimit_part_node(call, i)->name;
    }

    /* a failure for each node waited on, once */
    ngx_http_redis_ratelimit_call_failures(call, rrl_call_fails);

    ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_TIMEOUT);
    ngx_http_redis_ratelimit_call_finish_handler(&call->finish);
}


/*
 * A call detached with a probe in Redis, unanswered for a whole timeout:
 * a failure of the probe's node. The call is held meanwhile: a stuck
 * connection the breaker drops fails its batches at once, and the last of
 * the call's parts coming out of them would free it.
 */

static void
ngx_http_redis_ratelimit_call_probe_timeout(
    ngx_http_redis_ratelimit_call_t *call)
{
    call->held = 1;
    ngx_http_redis_ratelimit_call_failures(call, rrl_call_probe_lost);
    call->held = 0;

    if (rrl_call_in_batches(call->parts) == 0) {
        ngx_http_redis_ratelimit_call_free(call);
    }
}


/* a failure of the node of each part that fails() says is one, once */

static void
ngx_http_redis_ratelimit_call_failures(ngx_http_redis_ratelimit_call_t *call,
    int (*fails)(rrl_call_t *parts, size_t part))
{
    ngx_uint_t  i;

    for (i = 0; i < rrl_call_parts(call->parts); i++) {
        if (fails(call->parts, i)) {
            ngx_http_redis_ratelimit_circuit_outcome(
                                  ngx_http_redis_ratelimit_part_node(call, i),
                                  0);
        }
    }
}


/*
 * The parts' replies merged into the script's reply to the request, each
 * limit in its order; the parts that passed are given back when another
 * rejected or failed.
 */

static void
ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_http_request_t                 *r;
    ngx_http_redis_ratelimit_ctx_t     *ctx;
    ngx_http_redis_ratelimit_done_pt    done;
    ngx_http_redis_ratelimit_result_t  *result;

    r = call->request;
    ctx = call->ctx;
    done = call->done;
    result = &ctx->result;

    result->nvalues = rrl_call_merge(call->parts, result->values,
                                     result->capacity);
    result->rc = result->nvalues ? NGX_OK : NGX_ERROR;

    ngx_http_redis_ratelimit_release(call);

    ngx_http_redis_ratelimit_call_detach(call);

    done(r, ctx);
}


/*
 * Reserve-then-release: the request does not pass as a whole, so each part
 * that passed is sent the script's release form, which gives back what its
 * reservation took. Not awaited: a release lost leaves the reservation
 * counted (the strict side).
 */

static void
ngx_http_redis_ratelimit_release(ngx_http_redis_ratelimit_call_t *call)
{
    size_t                            i, len;
    u_char                           *p;
    ngx_http_redis_ratelimit_node_t  *node;

    for (i = 0; i < rrl_call_parts(call->parts); i++) {
        node = ngx_http_redis_ratelimit_part_node(call, i);
        len = rrl_call_release(call->parts, i, NULL, 0);

        if (len == 0 || node->ac == NULL) {
            continue;
        }

        p = ngx_pnalloc(call->request->pool, len);
        if (p == NULL) {
            return;
        }

        (void) rrl_call_release(call->parts, i, (char *) p, len);
        (void) ngx_http_redis_ratelimit_command_formatted(node, NULL, NULL,
                                                          (char *) p, len);
    }
}


void
ngx_http_redis_ratelimit_call_detach(ngx_http_redis_ratelimit_call_t *call)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (call->finish.posted) {
        ngx_delete_posted_event(&call->finish);
    }

    call->ctx->call = NULL;
    call->request = NULL;
    call->ctx = NULL;
    rrl_call_detach(call->parts);

    link->parked--;

    if (rrl_call_in_batches(call->parts) == 0) {
        ngx_http_redis_ratelimit_call_free(call);
        return;
    }

    /*
     * The request went away with parts in Redis. Should one carry its
     * node's probe, the timer stays: a Redis that never answers on that
     * connection still ends the probe, as a failure. Nothing else waits.
     */

    if (rrl_call_probe_out(call->parts) && call->timer.timer_set) {
        /* the request's log is gone with it */
        call->timer.log = link->log;

        /* and a graceful shutdown need not wait for the call */
        call->timer.cancelable = 1;

        return;
    }

    if (call->timer.timer_set) {
        ngx_del_timer(&call->timer);
    }
}


static void
ngx_http_redis_ratelimit_call_free(ngx_http_redis_ratelimit_call_t *call)
{
    if (call->timer.timer_set) {
        ngx_del_timer(&call->timer);
    }

    rrl_call_free(call->parts);
    ngx_free(call);
}
