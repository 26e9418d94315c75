
/*
 * The per-worker Redis link: the script calls of requests, routed to a
 * node (the server, the primary a Sentinel names, or in a Cluster the
 * primary of the keys' slot, one call per slot), each request's calls under
 * one timeout; they outlive their request if the client goes away.
 *
 * The calls made in one turn of the event loop for one node (and slot) go
 * as one EVALSHA of the script's batch form: Redis runs the script once for
 * all of them, which is most of its cost, and each request is still decided
 * alone, atomically.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_link.h"
#include "rrl_metrics_count.h"


/* a batch: at most this many requests, keys; a script run stays short */
#define NGX_HTTP_REDIS_RATELIMIT_BATCH_PARTS  64
#define NGX_HTTP_REDIS_RATELIMIT_BATCH_KEYS   256


typedef struct ngx_http_redis_ratelimit_batch_s
    ngx_http_redis_ratelimit_batch_t;


/* one request's script call on one node: its limits of one slot */
typedef struct {
    ngx_http_redis_ratelimit_call_t   *call;
    ngx_http_redis_ratelimit_node_t   *node;  /* where it was sent */
    ngx_http_redis_ratelimit_batch_t  *batch; /* what carries it */
    ngx_uint_t                   slot;

    /* in the request's pool: used only while the request waits */
    int                          argc;
    const char                 **argv;
    size_t                      *argvlen;
    ngx_uint_t                   nlimits;
    ngx_uint_t                  *index;       /* the request's limit of each */
    int64_t                     *values;      /* the reply */

    unsigned                     in_redis:1;  /* in a batch */
    unsigned                     answered:1;
    unsigned                     ok:1;        /* values are set */
    unsigned                     counted:1;   /* the breaker saw its outcome */
    unsigned                     probe:1;     /* its node's half-open probe */
} ngx_http_redis_ratelimit_part_t;


/*
 * One EVALSHA of the batch form: the parts of one node and slot made in one
 * turn of the event loop. Open (in link->batches) until the turn ends, then
 * sent; the command is kept, in its own memory, to be sent again after
 * NOSCRIPT, MOVED or ASK, when the requests' pools may be gone.
 */
struct ngx_http_redis_ratelimit_batch_s {
    ngx_queue_t                  queue;
    ngx_http_redis_ratelimit_node_t   *node;
    ngx_uint_t                   slot;
    ngx_uint_t                   nkeys;
    size_t                       size;        /* of the command, at most */
    u_char                      *command;     /* RESP, once sent */
    size_t                       len;
    ngx_uint_t                   nvalues;     /* the reply's integers */
    unsigned                     retried:1;   /* after NOSCRIPT */
    unsigned                     redirected:1; /* after MOVED or ASK */
    int64_t                      sent;        /* for metrics, us */
    ngx_uint_t                   nparts;
    ngx_http_redis_ratelimit_part_t   *parts[NGX_HTTP_REDIS_RATELIMIT_BATCH_PARTS];
};


struct ngx_http_redis_ratelimit_call_s {
    ngx_http_request_t          *request;     /* NULL once detached */
    ngx_http_redis_ratelimit_ctx_t   *ctx;
    ngx_http_redis_ratelimit_done_pt  done;
    ngx_event_t                  timer;       /* command timeout */
    ngx_event_t                  finish;      /* posted on the last reply */
    ngx_uint_t                   nparts;
    ngx_uint_t                   pending;     /* parts not answered */
    ngx_uint_t                   in_redis;    /* parts in batches */
    ngx_http_redis_ratelimit_part_t  parts[1];
};


static void ngx_http_redis_ratelimit_link_gauges(rrl_metrics_t *m);
static ngx_int_t ngx_http_redis_ratelimit_split(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_http_redis_ratelimit_call_t *call);
static ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_route(
    ngx_uint_t slot);
static ngx_int_t ngx_http_redis_ratelimit_enqueue(
    ngx_http_redis_ratelimit_part_t *part);
static void ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_batch_send(
    ngx_http_redis_ratelimit_batch_t *batch);
static u_char *ngx_http_redis_ratelimit_batch_format(
    ngx_http_redis_ratelimit_batch_t *batch,
    ngx_http_redis_ratelimit_zone_t **zones, u_char *p);
static ngx_http_redis_ratelimit_zone_t *ngx_http_redis_ratelimit_part_zone(
    ngx_http_redis_ratelimit_part_t *part, ngx_uint_t j);
static ngx_int_t ngx_http_redis_ratelimit_part_out(
    ngx_http_redis_ratelimit_part_t *part);
static void ngx_http_redis_ratelimit_batch_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static ngx_int_t ngx_http_redis_ratelimit_batch_resend(
    ngx_http_redis_ratelimit_batch_t *batch,
    ngx_http_redis_ratelimit_node_t *node);
static ngx_int_t ngx_http_redis_ratelimit_redirect(
    ngx_http_redis_ratelimit_batch_t *batch, redisReply *rr, ngx_uint_t kind);
static void ngx_http_redis_ratelimit_batch_answer(
    ngx_http_redis_ratelimit_batch_t *batch, redisReply *rr);
static void ngx_http_redis_ratelimit_batch_fail(
    ngx_http_redis_ratelimit_batch_t *batch, const char *fmt, ...);
static void ngx_http_redis_ratelimit_part_unsent(
    ngx_http_redis_ratelimit_part_t *part);
static void ngx_http_redis_ratelimit_batch_unsent(
    ngx_http_redis_ratelimit_batch_t *batch, ngx_uint_t failed);
static void ngx_http_redis_ratelimit_batch_free(
    ngx_http_redis_ratelimit_batch_t *batch);
static void ngx_http_redis_ratelimit_part_done(
    ngx_http_redis_ratelimit_part_t *part);
static void ngx_http_redis_ratelimit_part_failed(
    ngx_http_redis_ratelimit_part_t *part, const char *fmt, ...);
static void ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_call_probe_timeout(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_free(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_merge(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_release(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_node_lost(
    ngx_http_redis_ratelimit_node_t *node);


ngx_http_redis_ratelimit_link_t  ngx_http_redis_ratelimit_link;


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
    ngx_queue_init(&link->batches);

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
    ngx_uint_t                        i, j, nparts;
    ngx_http_redis_ratelimit_call_t  *call;
    ngx_http_redis_ratelimit_part_t  *part;
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

    /* at most a part a limit; not in r->pool: hiredis may outlive it */
    nparts = (link->conf->mode == NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER)
             ? ctx->nlimits : 1;

    call = ngx_calloc(sizeof(ngx_http_redis_ratelimit_call_t)
                      + (nparts - 1) * sizeof(ngx_http_redis_ratelimit_part_t),
                      r->connection->log);
    if (call == NULL) {
        return NULL;
    }

    call->request = r;
    call->ctx = ctx;
    call->done = done;

    if (ngx_http_redis_ratelimit_split(r, ctx, call) != NGX_OK) {
        ngx_free(call);
        return NULL;
    }

    /* every part must have somewhere to go, or none is sent */

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        node = ngx_http_redis_ratelimit_route(part->slot);

        if (node == NULL || node->ac == NULL) {
            ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: no connection to %V",
                                     node ? &node->name : &link->conf->server);
            ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);
            goto failed;
        }

        part->node = node;
    }

    for (i = 0; i < call->nparts; i++) {
        node = call->parts[i].node;

        /* a node is asked once a call: its parts go with one probe */
        for (j = 0; j < i && call->parts[j].node != node; j++) { /* void */ }

        if (j < i) {
            continue;
        }

        switch (ngx_http_redis_ratelimit_circuit_allows(node)) {

        case RRL_BREAKER_PROBE:
            call->parts[i].probe = 1;
            break;

        case RRL_BREAKER_REFUSE:
            while (i--) {
                /* the probes granted to the call: not made */
                if (call->parts[i].probe) {
                    ngx_http_redis_ratelimit_circuit_abandon(
                                                         call->parts[i].node);
                }
            }

            ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CIRCUIT_OPEN);
            goto failed;
        }
    }

    call->timer.handler = ngx_http_redis_ratelimit_call_timeout_handler;
    call->timer.data = call;
    call->timer.log = r->connection->log;

    call->finish.handler = ngx_http_redis_ratelimit_call_finish_handler;
    call->finish.data = call;
    call->finish.log = r->connection->log;

    call->pending = call->nparts;

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (ngx_http_redis_ratelimit_enqueue(part) != NGX_OK) {
            ngx_http_redis_ratelimit_part_unsent(part);
            ngx_http_redis_ratelimit_part_failed(part, "no memory");
        }
    }

    link->parked++;

    /* not cancelable: a graceful shutdown waits for parked requests */
    ngx_add_timer(&call->timer, link->conf->timeout);

    return call;

failed:

    ngx_free(call);

    return NULL;
}


/*
 * The request's script call, as parts: one in a single Redis; in a
 * Cluster, one a slot of its keys, each with the limits of that slot, in
 * the request's order.
 */

static ngx_int_t
ngx_http_redis_ratelimit_split(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_http_redis_ratelimit_call_t *call)
{
    u_char                           *p;
    size_t                           *argvlen;
    ngx_uint_t                        i, j, k, n, *slots;
    const char                      **argv;
    ngx_http_redis_ratelimit_part_t  *part;

    n = ctx->nlimits;

    if (ngx_http_redis_ratelimit_link.conf->mode
        != NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER)
    {
        part = &call->parts[0];

        part->call = call;
        part->argc = ctx->argc;
        part->argv = ctx->argv;
        part->argvlen = ctx->argvlen;
        part->nlimits = n;
        part->values = ctx->result.values;

        part->index = ngx_palloc(r->pool, n * sizeof(ngx_uint_t));
        if (part->index == NULL) {
            return NGX_ERROR;
        }

        for (i = 0; i < n; i++) {
            part->index[i] = i;
        }

        call->nparts = 1;

        return NGX_OK;
    }

    slots = ngx_palloc(r->pool, n * sizeof(ngx_uint_t));
    if (slots == NULL) {
        return NGX_ERROR;
    }

    /* the keys are argv[3 ..]: see ngx_http_redis_ratelimit_prepare() */
    for (i = 0; i < n; i++) {
        slots[i] = rrl_key_slot(ctx->argv[3 + i], ctx->argvlen[3 + i]);
    }

    for (i = 0; i < n; i++) {

        for (k = 0; k < call->nparts; k++) {
            if (call->parts[k].slot == slots[i]) {
                break;
            }
        }

        if (k < call->nparts) {
            /* added with the first limit of its slot */
            continue;
        }

        part = &call->parts[call->nparts++];
        part->call = call;
        part->slot = slots[i];

        for (j = i; j < n; j++) {
            if (slots[j] == slots[i]) {
                part->nlimits++;
            }
        }

        part->index = ngx_palloc(r->pool, part->nlimits * sizeof(ngx_uint_t));
        argv = ngx_palloc(r->pool, (4 + 6 * part->nlimits) * sizeof(char *));
        argvlen = ngx_palloc(r->pool,
                             (4 + 6 * part->nlimits) * sizeof(size_t));
        part->values = ngx_palloc(r->pool,
                                  (RRL_REPLY_HEADER
                                   + RRL_REPLY_PER_LIMIT * part->nlimits)
                                  * sizeof(int64_t));
        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);

        if (part->index == NULL || argv == NULL || argvlen == NULL
            || part->values == NULL || p == NULL)
        {
            return NGX_ERROR;
        }

        argv[0] = ctx->argv[0];
        argvlen[0] = ctx->argvlen[0];
        argv[1] = ctx->argv[1];
        argvlen[1] = ctx->argvlen[1];
        argv[2] = (char *) p;
        argvlen[2] = ngx_sprintf(p, "%ui", part->nlimits) - p;

        /* ARGV[1], the time: as the whole call has it */
        argv[3 + part->nlimits] = ctx->argv[3 + n];
        argvlen[3 + part->nlimits] = ctx->argvlen[3 + n];

        k = 0;

        for (j = i; j < n; j++) {
            if (slots[j] != slots[i]) {
                continue;
            }

            part->index[k] = j;

            argv[3 + k] = ctx->argv[3 + j];
            argvlen[3 + k] = ctx->argvlen[3 + j];

            ngx_memcpy(&argv[4 + part->nlimits + RRL_ARGS_PER_LIMIT * k],
                       &ctx->argv[4 + n + RRL_ARGS_PER_LIMIT * j],
                       RRL_ARGS_PER_LIMIT * sizeof(char *));
            ngx_memcpy(&argvlen[4 + part->nlimits + RRL_ARGS_PER_LIMIT * k],
                       &ctx->argvlen[4 + n + RRL_ARGS_PER_LIMIT * j],
                       RRL_ARGS_PER_LIMIT * sizeof(size_t));
            k++;
        }

        part->argc = 4 + (RRL_ARGS_PER_LIMIT + 1) * part->nlimits;
        part->argv = argv;
        part->argvlen = argvlen;
    }

    return NGX_OK;
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
ngx_http_redis_ratelimit_enqueue(ngx_http_redis_ratelimit_part_t *part)
{
    size_t                             size;
    ngx_uint_t                         j, m;
    ngx_queue_t                       *q;
    ngx_http_redis_ratelimit_batch_t  *batch;
    ngx_http_redis_ratelimit_link_t   *link = &ngx_http_redis_ratelimit_link;

    batch = NULL;

    for (q = ngx_queue_head(&link->batches);
         q != ngx_queue_sentinel(&link->batches);
         q = ngx_queue_next(q))
    {
        batch = ngx_queue_data(q, ngx_http_redis_ratelimit_batch_t, queue);

        if (batch->node == part->node && batch->slot == part->slot) {
            break;
        }

        batch = NULL;
    }

    if (batch == NULL) {
        batch = ngx_calloc(sizeof(ngx_http_redis_ratelimit_batch_t),
                           link->log);
        if (batch == NULL) {
            return NGX_ERROR;
        }

        batch->node = part->node;
        batch->slot = part->slot;
        batch->node->batches++;

        ngx_queue_insert_tail(&link->batches, &batch->queue);

        if (!link->flush.posted) {
            ngx_post_event(&link->flush, &ngx_posted_events);
        }
    }

    /* what the part adds to the command: its count, keys and arguments */

    size = sizeof("$20\r\n\r\n") - 1 + NGX_INT_T_LEN;

    for (j = 0; j < part->nlimits; j++) {
        size += sizeof("$20\r\n\r\n") - 1 + NGX_INT_T_LEN
                + part->argvlen[3 + j];

        for (m = 0; m < RRL_ARGS_PER_LIMIT; m++) {
            size += sizeof("$20\r\n\r\n") - 1 + NGX_INT_T_LEN
                    + part->argvlen[4 + part->nlimits
                                    + RRL_ARGS_PER_LIMIT * j + m];
        }
    }

    batch->parts[batch->nparts++] = part;
    batch->nkeys += part->nlimits;
    batch->size += size;
    batch->nvalues += RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * part->nlimits;

    part->batch = batch;
    part->in_redis = 1;
    part->call->in_redis++;

    if (batch->nparts == NGX_HTTP_REDIS_RATELIMIT_BATCH_PARTS
        || batch->nkeys >= NGX_HTTP_REDIS_RATELIMIT_BATCH_KEYS)
    {
        ngx_queue_remove(&batch->queue);
        ngx_http_redis_ratelimit_batch_send(batch);
    }

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev)
{
    ngx_event_t                       *wev;
    ngx_queue_t                       *q;
    ngx_http_redis_ratelimit_node_t   *node;
    ngx_http_redis_ratelimit_batch_t  *batch;
    ngx_http_redis_ratelimit_link_t   *link = &ngx_http_redis_ratelimit_link;

    while (!ngx_queue_empty(&link->batches)) {
        q = ngx_queue_head(&link->batches);
        ngx_queue_remove(q);

        batch = ngx_queue_data(q, ngx_http_redis_ratelimit_batch_t, queue);
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
ngx_http_redis_ratelimit_batch_send(ngx_http_redis_ratelimit_batch_t *batch)
{
    ngx_uint_t                        i, n;
    ngx_http_redis_ratelimit_zone_t **zones;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_part_t  *part;

    node = batch->node;

    /* out of the open batches: the node may only be waited on now */
    node->batches--;

    /* a request gone (or timed out) in the meantime is not sent */

    n = 0;

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        if (part->call->request == NULL || part->answered) {
            ngx_http_redis_ratelimit_part_unsent(part);
            batch->nkeys -= part->nlimits;
            batch->nvalues -= RRL_REPLY_HEADER
                              + RRL_REPLY_PER_LIMIT * part->nlimits;
            (void) ngx_http_redis_ratelimit_part_out(part);
            continue;
        }

        batch->parts[n++] = part;
    }

    batch->nparts = n;

    if (n == 0) {
        ngx_http_redis_ratelimit_batch_free(batch);
        return;
    }

    if (node->ac == NULL) {
        ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);
        ngx_http_redis_ratelimit_batch_unsent(batch, 1);
        ngx_http_redis_ratelimit_batch_fail(batch, "no connection");
        ngx_http_redis_ratelimit_batch_free(batch);
        return;
    }

    batch->command = ngx_alloc(batch->size + 256, node->log);
    zones = ngx_alloc(batch->nkeys * sizeof(ngx_http_redis_ratelimit_zone_t *),
                      node->log);

    if (batch->command == NULL || zones == NULL) {
        if (zones) {
            ngx_free(zones);
        }

        ngx_http_redis_ratelimit_batch_unsent(batch, 0);
        ngx_http_redis_ratelimit_batch_fail(batch, "no memory");
        ngx_http_redis_ratelimit_batch_free(batch);
        return;
    }

    batch->len = ngx_http_redis_ratelimit_batch_format(batch, zones,
                                                       batch->command)
                 - batch->command;

    ngx_free(zones);

    if (ngx_http_redis_ratelimit_command_formatted(node,
                                      ngx_http_redis_ratelimit_batch_reply,
                                      batch, (char *) batch->command,
                                      batch->len)
        != NGX_OK)
    {
        ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);
        ngx_http_redis_ratelimit_batch_unsent(batch, 1);
        ngx_http_redis_ratelimit_batch_fail(batch, "cannot send: %s",
                                            node->ac && node->ac->errstr[0]
                                            ? node->ac->errstr : "closing");
        ngx_http_redis_ratelimit_batch_free(batch);
        return;
    }

    batch->sent = ngx_http_redis_ratelimit_clock();
    node->in_flight++;
}


/*
 * [EVALSHA sha nkeys keys.. "batch" "" nzones (zone args)..
 * (n (zone cost)..)..] in RESP, from the parts' arguments (see
 * ngx_http_redis_ratelimit_prepare()): one string, that hiredis sends as
 * it is. Each zone's arguments go once: zones[] has room for a zone a key.
 */

static u_char *
ngx_http_redis_ratelimit_batch_format(ngx_http_redis_ratelimit_batch_t *batch,
    ngx_http_redis_ratelimit_zone_t **zones, u_char *p)
{
    size_t                            len;
    ngx_uint_t                        i, j, z, nzones, argc;
    ngx_str_t                        *sha;
    ngx_http_redis_ratelimit_part_t  *part;
    ngx_http_redis_ratelimit_zone_t  *zone;
    u_char                            number[NGX_INT_T_LEN];

#define ngx_http_redis_ratelimit_bulk(data, len)                              \
    p = ngx_sprintf(p, "$%uz\r\n", (size_t) (len));                           \
    p = ngx_cpymem(p, data, len);                                             \
    *p++ = '\r'; *p++ = '\n'

#define ngx_http_redis_ratelimit_bulk_number(n)                               \
    len = ngx_sprintf(number, "%ui", (ngx_uint_t) (n)) - number;              \
    ngx_http_redis_ratelimit_bulk(number, len)

    /* the batch's zones: a few, in practice */

    nzones = 0;

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        for (j = 0; j < part->nlimits; j++) {
            zone = ngx_http_redis_ratelimit_part_zone(part, j);

            for (z = 0; z < nzones && zones[z] != zone; z++) { /* void */ }

            if (z == nzones) {
                zones[nzones++] = zone;
            }
        }
    }

    sha = &ngx_http_redis_ratelimit_link.conf->script_sha1;

    argc = 3 + batch->nkeys + 3 + 4 * nzones + batch->nparts
           + 2 * batch->nkeys;

    p = ngx_sprintf(p, "*%ui\r\n$7\r\nEVALSHA\r\n", argc);
    ngx_http_redis_ratelimit_bulk(sha->data, sha->len);
    ngx_http_redis_ratelimit_bulk_number(batch->nkeys);

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        for (j = 0; j < part->nlimits; j++) {
            ngx_http_redis_ratelimit_bulk(part->argv[3 + j],
                                          part->argvlen[3 + j]);
        }
    }

    /* ARGV: "batch", "" (no injected time: Redis TIME), the zones */

    p = ngx_cpymem(p, "$5\r\nbatch\r\n$0\r\n\r\n",
                   sizeof("$5\r\nbatch\r\n$0\r\n\r\n") - 1);
    ngx_http_redis_ratelimit_bulk_number(nzones);

    for (z = 0; z < nzones; z++) {
        zone = zones[z];
        ngx_http_redis_ratelimit_bulk(zone->algorithm_arg.data,
                                      zone->algorithm_arg.len);
        ngx_http_redis_ratelimit_bulk(zone->limit_arg.data,
                                      zone->limit_arg.len);
        ngx_http_redis_ratelimit_bulk(zone->period_arg.data,
                                      zone->period_arg.len);
        ngx_http_redis_ratelimit_bulk(zone->burst_arg.data,
                                      zone->burst_arg.len);
    }

    /* each request: its count, then each limit's zone and cost */

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        ngx_http_redis_ratelimit_bulk_number(part->nlimits);

        for (j = 0; j < part->nlimits; j++) {
            zone = ngx_http_redis_ratelimit_part_zone(part, j);

            for (z = 0; zones[z] != zone; z++) { /* void */ }

            ngx_http_redis_ratelimit_bulk_number(z + 1);

            /* the cost: the limit's 5th argument */
            ngx_http_redis_ratelimit_bulk(
                part->argv[4 + part->nlimits + RRL_ARGS_PER_LIMIT * j + 4],
                part->argvlen[4 + part->nlimits + RRL_ARGS_PER_LIMIT * j + 4]);
        }
    }

#undef ngx_http_redis_ratelimit_bulk_number
#undef ngx_http_redis_ratelimit_bulk

    return p;
}


/* the zone of the part's limit j, from its request */

static ngx_http_redis_ratelimit_zone_t *
ngx_http_redis_ratelimit_part_zone(ngx_http_redis_ratelimit_part_t *part,
    ngx_uint_t j)
{
    return part->call->ctx->limits[part->index[j]]->zone;
}


/*
 * Takes the part out of its batch. NGX_DECLINED: nobody waits for it any
 * more, as its request went away (and its arguments with the request's
 * pool) or timed out; the call of a request gone is freed with its last
 * part.
 */

static ngx_int_t
ngx_http_redis_ratelimit_part_out(ngx_http_redis_ratelimit_part_t *part)
{
    ngx_http_redis_ratelimit_call_t  *call = part->call;

    part->in_redis = 0;
    part->batch = NULL;
    call->in_redis--;

    if (call->request != NULL && !part->answered) {
        return NGX_OK;
    }

    if (call->in_redis == 0 && call->request == NULL) {
        ngx_http_redis_ratelimit_call_free(call);
    }

    return NGX_DECLINED;
}


static void
ngx_http_redis_ratelimit_batch_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                             len;
    ngx_uint_t                         i, kind, counted;
    const char                        *script;
    redisReply                        *rr = reply;
    ngx_http_redis_ratelimit_node_t   *node;
    ngx_http_redis_ratelimit_batch_t  *batch = privdata;

    node = batch->node;

    ngx_http_redis_ratelimit_metrics_reply(batch->sent, rr);

    kind = (rr != NULL && rr->type == REDIS_REPLY_ERROR)
           ? (ngx_uint_t) rrl_reply_error_kind(rr->str, rr->len)
           : RRL_REPLY_ERROR;

    /* NOSCRIPT and redirections are Redis answering: not for the breaker */

    counted = 1;

    for (i = 0; i < batch->nparts; i++) {
        if (!batch->parts[i]->counted) {
            batch->parts[i]->counted = 1;
            counted = 0;
        }
    }

    if (!counted) {
        ngx_http_redis_ratelimit_circuit_outcome(node,
                               rr != NULL
                               && (rr->type == REDIS_REPLY_ARRAY
                                   || kind == RRL_REPLY_NOSCRIPT
                                   || kind == RRL_REPLY_MOVED
                                   || kind == RRL_REPLY_ASK));
    }

    node->in_flight--;

    if (kind == RRL_REPLY_NOSCRIPT && !batch->retried) {
        /* Redis lost the script (restart, SCRIPT FLUSH); it did not run */
        batch->retried = 1;

        script = rrl_script(&len);

        if (ngx_http_redis_ratelimit_command(node, NULL, NULL,
                                             "SCRIPT LOAD %b", script, len)
            == NGX_OK
            && ngx_http_redis_ratelimit_batch_resend(batch, node) == NGX_OK)
        {
            return;
        }
    }

    if ((kind == RRL_REPLY_MOVED || kind == RRL_REPLY_ASK)
        && !batch->redirected)
    {
        batch->redirected = 1;

        if (ngx_http_redis_ratelimit_redirect(batch, rr, kind) == NGX_OK) {
            ngx_http_redis_ratelimit_node_idle(node);
            return;
        }
    }

    ngx_http_redis_ratelimit_batch_answer(batch, rr);
    ngx_http_redis_ratelimit_batch_free(batch);

    ngx_http_redis_ratelimit_node_idle(node);
}


static ngx_int_t
ngx_http_redis_ratelimit_batch_resend(ngx_http_redis_ratelimit_batch_t *batch,
    ngx_http_redis_ratelimit_node_t *node)
{
    ngx_uint_t  i;

    if (ngx_http_redis_ratelimit_command_formatted(node,
                                      ngx_http_redis_ratelimit_batch_reply,
                                      batch, (char *) batch->command,
                                      batch->len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    batch->node = node;
    batch->sent = ngx_http_redis_ratelimit_clock();
    node->in_flight++;

    for (i = 0; i < batch->nparts; i++) {
        batch->parts[i]->node = node;
        batch->parts[i]->counted = 0;
        /* the probe, if any, was the first node's: its reply ended it */
        batch->parts[i]->probe = 0;
    }

    return NGX_OK;
}


/*
 * MOVED: the slot has a new primary for good; the map is refreshed, and the
 * batch goes there now. ASK: the keys are being migrated; this batch alone
 * goes to the target, after ASKING.
 */

static ngx_int_t
ngx_http_redis_ratelimit_redirect(ngx_http_redis_ratelimit_batch_t *batch,
    redisReply *rr, ngx_uint_t kind)
{
    unsigned                          slot, port;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;
    char                              host[RRL_HOST_MAX];

    if (link->conf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER
        || rrl_reply_redirect(rr->str, rr->len, &slot, host, &port) != RRL_OK
        || slot != batch->slot)
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
                                     &batch->node->name, host);
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
ngx_http_redis_ratelimit_batch_answer(ngx_http_redis_ratelimit_batch_t *batch,
    redisReply *rr)
{
    size_t                            i, j, k, n, len;
    ngx_uint_t                        kind;
    ngx_http_redis_ratelimit_part_t  *part;
    u_char                            text[128];

    if (rr == NULL) {
        ngx_http_redis_ratelimit_batch_fail(batch, "connection lost");
        return;
    }

    if (rr->type == REDIS_REPLY_ERROR) {
        kind = rrl_reply_error_kind(rr->str, rr->len);

        switch (kind) {

        case RRL_REPLY_READONLY:
        case RRL_REPLY_MASTERDOWN:
            /* not, or no more, the primary */
            if (ngx_http_redis_ratelimit_link.conf->mode
                == NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL)
            {
                ngx_http_redis_ratelimit_sentinel_ask();
            }

            break;

        case RRL_REPLY_CLUSTERDOWN:
        case RRL_REPLY_MOVED:
        case RRL_REPLY_ASK:
            ngx_http_redis_ratelimit_cluster_refresh();
            break;
        }

        /* escaped: a hostile server must not forge log lines */
        len = rrl_printable((char *) text, sizeof(text),
                            (u_char *) rr->str, rr->len);
        ngx_http_redis_ratelimit_batch_fail(batch, "%*s", len, text);
        return;
    }

    if (rr->type != REDIS_REPLY_ARRAY || rr->elements != batch->nvalues) {
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

    k = 0;

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];
        n = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * part->nlimits;

        if (ngx_http_redis_ratelimit_part_out(part) == NGX_OK) {
            for (j = 0; j < n; j++) {
                part->values[j] = rr->element[k + j]->integer;
            }

            part->ok = 1;
            ngx_http_redis_ratelimit_part_done(part);
        }

        k += n;
    }
}


static void
ngx_http_redis_ratelimit_batch_fail(ngx_http_redis_ratelimit_batch_t *batch,
    const char *fmt, ...)
{
    u_char                           *p;
    va_list                           args;
    ngx_uint_t                        i;
    ngx_http_redis_ratelimit_part_t  *part;
    u_char                            error[128];

    va_start(args, fmt);
    p = ngx_vslprintf(error, error + sizeof(error), fmt, args);
    va_end(args);

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        if (ngx_http_redis_ratelimit_part_out(part) != NGX_OK) {
            continue;
        }

        ngx_http_redis_ratelimit_part_failed(part, "%*s",
                                             (size_t) (p - error), error);
    }
}


/*
 * A part that is not sent: the probe it holds, if the breaker has not seen
 * its outcome, is abandoned (the next call probes).
 */

static void
ngx_http_redis_ratelimit_part_unsent(ngx_http_redis_ratelimit_part_t *part)
{
    if (part->counted) {
        return;
    }

    part->counted = 1;

    if (part->probe) {
        ngx_http_redis_ratelimit_circuit_abandon(part->node);
    }
}


/*
 * A batch that cannot be sent: a failure of its node when the node is at
 * fault (no connection, a write refused), once; else its probes abandoned
 */

static void
ngx_http_redis_ratelimit_batch_unsent(ngx_http_redis_ratelimit_batch_t *batch,
    ngx_uint_t failed)
{
    ngx_uint_t                        i, counted;
    ngx_http_redis_ratelimit_part_t  *part;

    counted = 1;

    for (i = 0; i < batch->nparts; i++) {
        part = batch->parts[i];

        if (part->counted) {
            continue;
        }

        counted = 0;

        if (!failed) {
            ngx_http_redis_ratelimit_part_unsent(part);
        }

        part->counted = 1;
    }

    if (failed && !counted) {
        ngx_http_redis_ratelimit_circuit_outcome(batch->node, 0);
    }
}


static void
ngx_http_redis_ratelimit_batch_free(ngx_http_redis_ratelimit_batch_t *batch)
{
    if (batch->command) {
        ngx_free(batch->command);
    }

    ngx_free(batch);
}


static void
ngx_http_redis_ratelimit_part_done(ngx_http_redis_ratelimit_part_t *part)
{
    ngx_http_redis_ratelimit_call_t  *call = part->call;

    part->answered = 1;

    if (--call->pending == 0) {
        /* resume the request from the event loop, not from inside hiredis */
        ngx_post_event(&call->finish, &ngx_posted_events);
    }
}


static void
ngx_http_redis_ratelimit_part_failed(ngx_http_redis_ratelimit_part_t *part,
    const char *fmt, ...)
{
    va_list                             args;
    u_char                             *p;
    ngx_http_redis_ratelimit_result_t  *result;

    result = &part->call->ctx->result;

    if (result->node == NULL) {
        /* the first failure tells */
        va_start(args, fmt);
        p = ngx_vslprintf(result->error,
                          result->error + sizeof(result->error), fmt, args);
        va_end(args);

        result->error_len = p - result->error;
        result->node = &part->node->name;
    }

    ngx_http_redis_ratelimit_part_done(part);
}


static void
ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_uint_t                          i, j;
    ngx_http_redis_ratelimit_part_t    *part;
    ngx_http_redis_ratelimit_result_t  *result;

    if (call->request == NULL) {
        ngx_http_redis_ratelimit_call_probe_timeout(call);
        return;
    }

    if (call->pending == 0) {
        /*
         * every part was answered in this turn, before the timers ran:
         * the finish posted then decides, and no timeout is counted
         */
        return;
    }

    result = &call->ctx->result;

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (part->answered) {
            continue;
        }

        if (result->node == NULL) {
            result->error_len = ngx_sprintf(result->error,
                                            "timed out after %M ms",
                                            ngx_http_redis_ratelimit_link
                                            .conf->timeout)
                                - result->error;
            result->node = &part->node->name;
        }

        part->answered = 1;
    }

    /*
     * a failure for each node waited on, once: every part is answered, so
     * a stuck connection the breaker drops can no more touch this call
     */

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (part->counted) {
            continue;
        }

        part->counted = 1;

        for (j = 0; j < i && call->parts[j].node != part->node; j++) {
            /* void */
        }

        if (j == i) {
            ngx_http_redis_ratelimit_circuit_outcome(part->node, 0);
        }
    }

    call->pending = 0;

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
    ngx_uint_t                        i;
    ngx_http_redis_ratelimit_part_t  *part;

    call->in_redis++;

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (part->in_redis && part->probe && !part->counted) {
            part->counted = 1;
            ngx_http_redis_ratelimit_circuit_outcome(part->node, 0);
        }
    }

    if (--call->in_redis == 0) {
        ngx_http_redis_ratelimit_call_free(call);
    }
}


static void
ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_http_request_t                *r;
    ngx_http_redis_ratelimit_ctx_t    *ctx;
    ngx_http_redis_ratelimit_done_pt   done;

    r = call->request;
    ctx = call->ctx;
    done = call->done;

    ngx_http_redis_ratelimit_merge(call);

    ngx_http_redis_ratelimit_call_detach(call);

    done(r, ctx);
}


/*
 * The parts' replies as one reply of the script: passed if every part
 * passed, each limit in the request's order. Where some part rejected or
 * failed, the parts that passed have consumed: they are given back.
 */

static void
ngx_http_redis_ratelimit_merge(ngx_http_redis_ratelimit_call_t *call)
{
    ngx_uint_t                          i, j, passed;
    ngx_http_redis_ratelimit_part_t    *part;
    ngx_http_redis_ratelimit_result_t  *result;

    result = &call->ctx->result;

    passed = 1;

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (!part->ok) {
            result->rc = NGX_ERROR;
            ngx_http_redis_ratelimit_release(call);
            return;
        }

        if (part->values[0] != 1) {
            passed = 0;
        }
    }

    if (call->parts[0].values == result->values) {
        /* one part, with the request's values */
        result->nvalues = RRL_REPLY_HEADER
                          + RRL_REPLY_PER_LIMIT * call->parts[0].nlimits;
        result->rc = NGX_OK;
        return;
    }

    result->values[0] = passed;
    result->values[1] = call->parts[0].values[1];

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        for (j = 0; j < part->nlimits; j++) {
            ngx_memcpy(&result->values[RRL_REPLY_HEADER
                                       + RRL_REPLY_PER_LIMIT * part->index[j]],
                       &part->values[RRL_REPLY_HEADER
                                     + RRL_REPLY_PER_LIMIT * j],
                       RRL_REPLY_PER_LIMIT * sizeof(int64_t));
        }
    }

    result->nvalues = RRL_REPLY_HEADER
                      + RRL_REPLY_PER_LIMIT * call->ctx->nlimits;
    result->rc = NGX_OK;

    if (!passed) {
        ngx_http_redis_ratelimit_release(call);
    }
}


/*
 * Reserve-then-release: the parts that passed committed their limits; the
 * request does not pass as a whole, so each gets the script's release form,
 * which gives back what that reservation took. Not awaited: a release lost
 * leaves the reservation counted (the strict side).
 */

static void
ngx_http_redis_ratelimit_release(ngx_http_redis_ratelimit_call_t *call)
{
    u_char                           *p;
    size_t                           *argvlen;
    ngx_uint_t                        i;
    const char                      **argv;
    ngx_http_request_t               *r;
    ngx_http_redis_ratelimit_part_t  *part;

    r = call->request;

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (!part->ok || part->values[0] != 1 || part->node->ac == NULL) {
            continue;
        }

        /* [EVALSHA sha n keys.. "release" at now limits..] */

        argv = ngx_palloc(r->pool, (part->argc + 2) * sizeof(char *));
        argvlen = ngx_palloc(r->pool, (part->argc + 2) * sizeof(size_t));
        p = ngx_pnalloc(r->pool, NGX_INT64_LEN);

        if (argv == NULL || argvlen == NULL || p == NULL) {
            return;
        }

        ngx_memcpy(argv, part->argv, (3 + part->nlimits) * sizeof(char *));
        ngx_memcpy(argvlen, part->argvlen,
                   (3 + part->nlimits) * sizeof(size_t));

        argv[3 + part->nlimits] = "release";
        argvlen[3 + part->nlimits] = sizeof("release") - 1;
        argv[4 + part->nlimits] = (char *) p;
        argvlen[4 + part->nlimits] = ngx_sprintf(p, "%L", part->values[1]) - p;

        ngx_memcpy(&argv[5 + part->nlimits], &part->argv[3 + part->nlimits],
                   (part->argc - 3 - part->nlimits) * sizeof(char *));
        ngx_memcpy(&argvlen[5 + part->nlimits],
                   &part->argvlen[3 + part->nlimits],
                   (part->argc - 3 - part->nlimits) * sizeof(size_t));

        (void) ngx_http_redis_ratelimit_command_argv(part->node, NULL, NULL,
                                                     part->argc + 2, argv,
                                                     argvlen);
    }
}


void
ngx_http_redis_ratelimit_call_detach(ngx_http_redis_ratelimit_call_t *call)
{
    ngx_uint_t                        i;
    ngx_http_redis_ratelimit_part_t  *part;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (call->finish.posted) {
        ngx_delete_posted_event(&call->finish);
    }

    call->ctx->call = NULL;
    call->request = NULL;
    call->ctx = NULL;

    link->parked--;

    if (call->in_redis == 0) {
        ngx_http_redis_ratelimit_call_free(call);
        return;
    }

    /*
     * The request went away with parts in Redis. Should one carry its
     * node's probe, the timer stays: a Redis that never answers on that
     * connection still ends the probe, as a failure. Nothing else waits.
     */

    for (i = 0; i < call->nparts; i++) {
        part = &call->parts[i];

        if (part->in_redis && part->probe && !part->counted
            && call->timer.timer_set)
        {
            /* the request's log is gone with it */
            call->timer.log = link->log;

            /* and a graceful shutdown need not wait for the call */
            call->timer.cancelable = 1;

            return;
        }
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

    ngx_free(call);
}

