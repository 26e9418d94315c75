
/*
 * The per-worker Redis link: the script calls of requests, routed to a
 * node (the server, the primary a Sentinel names, or in a Cluster the
 * primary of the keys' slot, one part per slot), each request's parts under
 * one timeout; they outlive their request if the client goes away. The
 * core keeps each call's parts and their state (rrl_call_*).
 *
 * The parts made in one turn of the event loop for one node and slot go as
 * one EVALSHA of the script's batch form (rrl_batch_*): Redis runs the
 * script once for all of them, and each request is still decided alone.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_link.h"
#include "rrl_metrics_count.h"
#include "rrl_call.h"


#define ngx_http_redis_ratelimit_part_node(call, i)                           \
    ((ngx_http_redis_ratelimit_node_t *) rrl_call_node((call)->parts, i))

/*
 * A batch (rrl_batch_t) is open until the turn ends, then sent; the core
 * keeps its command, sent again after NOSCRIPT, MOVED or ASK, when the
 * requests' pools may be gone. Its entries' data: their calls.
 */
#define ngx_http_redis_ratelimit_batch_node(batch)                            \
    ((ngx_http_redis_ratelimit_node_t *) rrl_batch_node(batch))


struct ngx_http_redis_ratelimit_call_s {
    ngx_http_request_t          *request;     /* NULL once detached */
    ngx_http_redis_ratelimit_ctx_t   *ctx;
    ngx_http_redis_ratelimit_done_pt  done;
    rrl_call_t                  *parts;
    ngx_event_t                  timer;       /* command timeout */
    ngx_event_t                  finish;      /* posted on the last reply */
    unsigned                     held:1;      /* not to be freed now */
};


static void ngx_http_redis_ratelimit_link_gauges(rrl_metrics_t *m);
static ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_route(
    ngx_uint_t slot);
static ngx_int_t ngx_http_redis_ratelimit_enqueue(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t i);
static void ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_batch_send(rrl_batch_t *batch);
static void ngx_http_redis_ratelimit_batch_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static ngx_int_t ngx_http_redis_ratelimit_batch_resend(rrl_batch_t *batch,
    ngx_http_redis_ratelimit_node_t *node);
static ngx_int_t ngx_http_redis_ratelimit_redirect(rrl_batch_t *batch,
    redisReply *rr, ngx_uint_t kind);
static void ngx_http_redis_ratelimit_batch_answer(rrl_batch_t *batch,
    redisReply *rr);
static void ngx_http_redis_ratelimit_batch_fail(rrl_batch_t *batch,
    const char *fmt, ...);
static void ngx_http_redis_ratelimit_batch_unsent(rrl_batch_t *batch,
    ngx_uint_t failed);
static ngx_int_t ngx_http_redis_ratelimit_part_out(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t i);
static void ngx_http_redis_ratelimit_part_unsent(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t i);
static void ngx_http_redis_ratelimit_part_done(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t i);
static void ngx_http_redis_ratelimit_part_failed(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t i, const char *fmt, ...);
static void ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_call_probe_timeout(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_release(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_node_lost(
    ngx_http_redis_ratelimit_node_t *node);
static void ngx_http_redis_ratelimit_call_free(
    ngx_http_redis_ratelimit_call_t *call);


ngx_http_redis_ratelimit_link_t  ngx_http_redis_ratelimit_link;

/* the batches open in this turn */
static rrl_batches_t  *ngx_http_redis_ratelimit_open;


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

    ngx_http_redis_ratelimit_open = rrl_batches_new();
    if (ngx_http_redis_ratelimit_open == NULL) {
        return NGX_ERROR;
    }

    link->flush.handler = ngx_http_redis_ratelimit_flush_handler;
    link->flush.log = cycle->log;

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

    if (link->flush.posted) {
        ngx_delete_posted_event(&link->flush);
    }

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

    switch (link->conf->mode) {

    case NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER:
        ngx_http_redis_ratelimit_cluster_refresh();
        break;

    case NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL:
        if (node == ngx_http_redis_ratelimit_sentinel_primary()) {
            ngx_http_redis_ratelimit_sentinel_ask();
        }

        break;
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
        if (ngx_http_redis_ratelimit_enqueue(call, i) != NGX_OK) {
            ngx_http_redis_ratelimit_part_unsent(call, i);
            ngx_http_redis_ratelimit_part_failed(call, i, "no memory");
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
 * Adds the part to the open batch of its node and slot, or to a new one;
 * the batches are sent when the turn of the event loop ends (a posted
 * event runs after the others), or at once when full.
 */

static ngx_int_t
ngx_http_redis_ratelimit_enqueue(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t i)
{
    int                               rc, created;
    rrl_batch_t                      *batch;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    node = ngx_http_redis_ratelimit_part_node(call, i);

    batch = rrl_batches_get(ngx_http_redis_ratelimit_open, node,
                            rrl_call_slot(call->parts, i), &created);
    if (batch == NULL) {
        return NGX_ERROR;
    }

    if (created) {
        node->batches++;

        if (!link->flush.posted) {
            ngx_post_event(&link->flush, &ngx_posted_events);
        }
    }

    rc = rrl_batch_add(batch, call->parts, i, call);

    if (rc == 1) {
        /* full */
        rrl_batches_take(ngx_http_redis_ratelimit_open, batch);
        ngx_http_redis_ratelimit_batch_send(batch);
    }

    return (rc == RRL_ERROR) ? NGX_ERROR : NGX_OK;
}


static void
ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev)
{
    rrl_batch_t                      *batch;
    ngx_event_t                      *wev;
    ngx_queue_t                      *q;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    while ((batch = rrl_batches_pop(ngx_http_redis_ratelimit_open)) != NULL) {
        ngx_http_redis_ratelimit_batch_send(batch);
    }

    /*
     * write now rather than after the other posted events (responses to
     * clients, mostly): Redis runs the batches while the worker writes
     * them; a failed write may free a context, never a node
     */

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->connection && node->connection->write->posted) {
            wev = node->connection->write;
            ngx_delete_posted_event(wev);
            wev->handler(wev);
        }
    }
}


static void
ngx_http_redis_ratelimit_batch_send(rrl_batch_t *batch)
{
    size_t                            i, part, len;
    ngx_str_t                        *sha;
    const char                       *command, *what, *error;
    ngx_http_redis_ratelimit_call_t  *call;
    ngx_http_redis_ratelimit_node_t  *node;

    node = ngx_http_redis_ratelimit_batch_node(batch);

    /* out of the open batches: the node may only be waited on now */
    node->batches--;

    /* a request gone (or timed out) in the meantime is not sent */

    for (i = 0; i < rrl_batch_size(batch); /* void */ ) {
        call = rrl_batch_data(batch, i);
        part = rrl_batch_part(batch, i);

        if (rrl_call_awaited(call->parts, part)) {
            i++;
            continue;
        }

        ngx_http_redis_ratelimit_part_unsent(call, part);
        rrl_batch_remove(batch, i);
        (void) ngx_http_redis_ratelimit_part_out(call, part);
    }

    if (rrl_batch_size(batch) == 0) {
        rrl_batch_free(batch);
        return;
    }

    if (node->ac == NULL) {
        what = "";
        error = "no connection";
        goto failed;
    }

    sha = &ngx_http_redis_ratelimit_link.conf->script_sha1;

    command = rrl_batch_command(batch, (char *) sha->data, sha->len,
                                &len);
    if (command == NULL) {
        ngx_http_redis_ratelimit_batch_unsent(batch, 0);
        ngx_http_redis_ratelimit_batch_fail(batch, "no memory");
        rrl_batch_free(batch);
        return;
    }

    if (ngx_http_redis_ratelimit_command_formatted(node,
                                      ngx_http_redis_ratelimit_batch_reply,
                                      batch, command, len)
        == NGX_OK)
    {
        rrl_batch_set_sent(batch, ngx_http_redis_ratelimit_clock());
        node->in_flight++;
        return;
    }

    what = "cannot send: ";
    error = (node->ac && node->ac->errstr[0]) ? node->ac->errstr : "closing";

failed:

    ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);
    ngx_http_redis_ratelimit_batch_unsent(batch, 1);
    ngx_http_redis_ratelimit_batch_fail(batch, "%s%s", what, error);
    rrl_batch_free(batch);
}


/*
 * Takes the part out of its batch. NGX_DECLINED: nobody waits for it any
 * more, as its request went away (and its arguments with the request's
 * pool) or timed out; the call of a request gone is freed with its last
 * part.
 */

static ngx_int_t
ngx_http_redis_ratelimit_part_out(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t i)
{
    if (rrl_call_out(call->parts, i)) {
        return NGX_OK;
    }

    if (call->request == NULL && !call->held
        && rrl_call_in_batches(call->parts) == 0)
    {
        ngx_http_redis_ratelimit_call_free(call);
    }

    return NGX_DECLINED;
}


static void
ngx_http_redis_ratelimit_batch_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                             len;
    ngx_uint_t                         kind;
    const char                        *script;
    redisReply                        *rr = reply;
    ngx_http_redis_ratelimit_node_t   *node;
    rrl_batch_t                       *batch = privdata;

    node = ngx_http_redis_ratelimit_batch_node(batch);

    ngx_http_redis_ratelimit_metrics_reply(rrl_batch_sent(batch), rr);

    kind = (rr != NULL && rr->type == REDIS_REPLY_ERROR)
           ? (ngx_uint_t) rrl_reply_error_kind(rr->str, rr->len)
           : RRL_REPLY_ERROR;

    if (rrl_batch_count(batch)) {
        ngx_http_redis_ratelimit_circuit_outcome(node,
                               rrl_retry_counts_ok(rr != NULL,
                                        rr && rr->type == REDIS_REPLY_ARRAY,
                                        kind));
    }

    node->in_flight--;

    switch (rrl_batch_retry(batch, kind)) {

    case RRL_RETRY_LOAD_SCRIPT:
        /* Redis lost the script (restart, SCRIPT FLUSH); it did not run */
        script = rrl_script(&len);

        if (ngx_http_redis_ratelimit_command(node, NULL, NULL,
                                             "SCRIPT LOAD %b", script, len)
            == NGX_OK
            && ngx_http_redis_ratelimit_batch_resend(batch, node) == NGX_OK)
        {
            return;
        }

        break;

    case RRL_RETRY_REDIRECT:
        if (ngx_http_redis_ratelimit_redirect(batch, rr, kind) == NGX_OK) {
            ngx_http_redis_ratelimit_node_idle(node);
            return;
        }

        break;
    }

    ngx_http_redis_ratelimit_batch_answer(batch, rr);
    rrl_batch_free(batch);

    ngx_http_redis_ratelimit_node_idle(node);
}


static ngx_int_t
ngx_http_redis_ratelimit_batch_resend(rrl_batch_t *batch,
    ngx_http_redis_ratelimit_node_t *node)
{
    size_t       len;
    const char  *command;

    /* built once: the core gives it back as it was sent */
    command = rrl_batch_command(batch, NULL, 0, &len);

    if (command == NULL
        || ngx_http_redis_ratelimit_command_formatted(node,
                                      ngx_http_redis_ratelimit_batch_reply,
                                      batch, command, len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    rrl_batch_set_sent(batch, ngx_http_redis_ratelimit_clock());
    node->in_flight++;

    /* counted anew; a probe was the first node's: its reply ended it */
    rrl_batch_resent(batch, node);

    return NGX_OK;
}


/*
 * MOVED: the slot has a new primary for good; the map is refreshed, and the
 * batch goes there now. ASK: the keys are being migrated; this batch alone
 * goes to the target, after ASKING.
 */

static ngx_int_t
ngx_http_redis_ratelimit_redirect(rrl_batch_t *batch, redisReply *rr,
    ngx_uint_t kind)
{
    unsigned                          slot, port;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;
    char                              host[RRL_HOST_MAX];

    if (link->conf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER
        || rrl_reply_redirect(rr->str, rr->len, &slot, host, &port) != RRL_OK
        || slot != rrl_batch_slot(batch))
    {
        return NGX_ERROR;
    }

    if (!ngx_http_redis_ratelimit_numeric(host)) {
        /*
         * a name (cluster-preferred-endpoint-type hostname): a worker never
         * resolves; the batch fails, and its answer refreshes the map
         */
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: %s from %V names "
                                     "\"%s\", not a numeric address",
                                     kind == RRL_REPLY_MOVED ? "MOVED" : "ASK",
                                     &ngx_http_redis_ratelimit_batch_node(
                                         batch)->name, host);
        return NGX_ERROR;
    }

    node = ngx_http_redis_ratelimit_node_get(NGX_HTTP_REDIS_RATELIMIT_DATA,
                                             (u_char *) host,
                                             (in_port_t) port, NULL);
    if (node == NULL) {
        return NGX_ERROR;
    }

    if (kind == RRL_REPLY_MOVED) {
        ngx_http_redis_ratelimit_cluster_moved(slot, node);

    } else if (node->ac == NULL) {
        /* a node not (yet) in the map: it is connected for this call */
        node->used = 1;
        ngx_http_redis_ratelimit_node_connect(node);
    }

    if (node->ac == NULL) {
        return NGX_ERROR;
    }

    if (kind == RRL_REPLY_ASK
        && ngx_http_redis_ratelimit_command(node, NULL, NULL, "ASKING")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_redis_ratelimit_batch_resend(batch, node);
}


/* each part waiting gets its request's share of the reply */

static void
ngx_http_redis_ratelimit_batch_answer(rrl_batch_t *batch, redisReply *rr)
{
    size_t                            i, j, k, n, part, len;
    int64_t                          *values;
    ngx_http_redis_ratelimit_call_t  *call;
    u_char                            text[128];

    if (rr == NULL) {
        ngx_http_redis_ratelimit_batch_fail(batch, "connection lost");
        return;
    }

    if (rr->type == REDIS_REPLY_ERROR) {
        switch (rrl_retry_ask(rrl_reply_error_kind(rr->str, rr->len))) {

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

        /* escaped: a hostile server must not forge log lines */
        len = rrl_printable((char *) text, sizeof(text),
                            (u_char *) rr->str, rr->len);
        ngx_http_redis_ratelimit_batch_fail(batch, "%*s", len, text);
        return;
    }

    if (rr->type != REDIS_REPLY_ARRAY
        || rr->elements != rrl_batch_values(batch))
    {
        ngx_http_redis_ratelimit_batch_fail(batch, "unexpected reply type %d",
                                            rr->type);
        return;
    }

    for (i = 0; i < rr->elements; i++) {
        if (rr->element[i]->type != REDIS_REPLY_INTEGER) {
            ngx_http_redis_ratelimit_batch_fail(batch,
                                               "unexpected element type %d",
                                               rr->element[i]->type);
            return;
        }
    }

    for (i = 0; i < rrl_batch_size(batch); i++) {
        call = rrl_batch_data(batch, i);
        part = rrl_batch_part(batch, i);
        k = rrl_batch_share(batch, i);

        if (ngx_http_redis_ratelimit_part_out(call, part) != NGX_OK) {
            continue;
        }

        n = rrl_call_values(call->parts, part);
        values = rrl_call_reply(call->parts, part);

        for (j = 0; j < n; j++) {
            values[j] = rr->element[k + j]->integer;
        }

        ngx_http_redis_ratelimit_part_done(call, part);
    }
}


static void
ngx_http_redis_ratelimit_batch_fail(rrl_batch_t *batch, const char *fmt,
    ...)
{
    u_char                           *p;
    size_t                            i, part;
    va_list                           args;
    ngx_http_redis_ratelimit_call_t  *call;
    u_char                            error[128];

    va_start(args, fmt);
    p = ngx_vslprintf(error, error + sizeof(error), fmt, args);
    va_end(args);

    for (i = 0; i < rrl_batch_size(batch); i++) {
        call = rrl_batch_data(batch, i);
        part = rrl_batch_part(batch, i);

        if (ngx_http_redis_ratelimit_part_out(call, part) == NGX_OK) {
            ngx_http_redis_ratelimit_part_failed(call, part, "%*s",
                                                 (size_t) (p - error), error);
        }
    }
}


/*
 * A batch that cannot be sent: a failure of its node when the node is at
 * fault (no connection, a write refused), once; else its probes abandoned
 */

static void
ngx_http_redis_ratelimit_batch_unsent(rrl_batch_t *batch, ngx_uint_t failed)
{
    size_t  i;

    if (failed) {
        if (rrl_batch_count(batch)) {
            ngx_http_redis_ratelimit_circuit_outcome(
                                  ngx_http_redis_ratelimit_batch_node(batch),
                                  0);
        }

        return;
    }

    for (i = 0; i < rrl_batch_size(batch); i++) {
        ngx_http_redis_ratelimit_part_unsent(
                                      rrl_batch_data(batch, i),
                                      rrl_batch_part(batch, i));
    }
}


/*
 * A part that is not sent: the probe it holds, if the breaker has not seen
 * its outcome, is abandoned (the next call probes).
 */

static void
ngx_http_redis_ratelimit_part_unsent(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t i)
{
    if (rrl_call_unsent(call->parts, i)) {
        ngx_http_redis_ratelimit_circuit_abandon(
                                  ngx_http_redis_ratelimit_part_node(call, i));
    }
}


static void
ngx_http_redis_ratelimit_part_done(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t i)
{
    if (rrl_call_answer(call->parts, i) == 0) {
        /* resume the request from the event loop, not from inside hiredis */
        ngx_post_event(&call->finish, &ngx_posted_events);
    }
}


static void
ngx_http_redis_ratelimit_part_failed(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t i, const char *fmt, ...)
{
    va_list                             args;
    u_char                             *p;
    ngx_http_redis_ratelimit_result_t  *result;

    result = &call->ctx->result;

    if (result->node == NULL) {
        /* the first failure tells */
        va_start(args, fmt);
        p = ngx_vslprintf(result->error,
                          result->error + sizeof(result->error), fmt, args);
        va_end(args);

        result->error_len = p - result->error;
        result->node = &ngx_http_redis_ratelimit_part_node(call, i)->name;
    }

    ngx_http_redis_ratelimit_part_done(call, i);
}


static void
ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_uint_t                          i, n;
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

    n = rrl_call_parts(call->parts);

    for (i = 0; i < n; i++) {
        if (rrl_call_fails(call->parts, i)) {
            ngx_http_redis_ratelimit_circuit_outcome(
                                  ngx_http_redis_ratelimit_part_node(call, i),
                                  0);
        }
    }

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
    ngx_uint_t  i, n;

    call->held = 1;
    n = rrl_call_parts(call->parts);

    for (i = 0; i < n; i++) {
        if (rrl_call_probe_lost(call->parts, i)) {
            ngx_http_redis_ratelimit_circuit_outcome(
                                  ngx_http_redis_ratelimit_part_node(call, i),
                                  0);
        }
    }

    call->held = 0;

    if (rrl_call_in_batches(call->parts) == 0) {
        ngx_http_redis_ratelimit_call_free(call);
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
