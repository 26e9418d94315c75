
/*
 * The batches of the link's script calls. A part joins the open batch
 * (rrl_batch_t) of its node and slot; the batches open are sent when the
 * turn of the event loop ends, or one at once when full. The core keeps a
 * batch's command, sent again after NOSCRIPT, MOVED or ASK, when the
 * requests' pools may be gone. Its entries' data: their calls' parts, that
 * the link is told of through its handlers.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_batch.h"


#define ngx_http_redis_ratelimit_batch_node(batch)                            \
    ((ngx_http_redis_ratelimit_node_t *) rrl_batch_node(batch))


/* this worker's batches */
typedef struct {
    ngx_http_redis_ratelimit_batch_handlers_t  up;    /* the link's */
    rrl_batches_t                             *open;  /* in this turn */
    ngx_event_t                                flush; /* sends them */
    ngx_queue_t                               *nodes; /* the link's */
    ngx_str_t                                 *sha;
} ngx_http_redis_ratelimit_batches_t;


static void ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_batch_send(rrl_batch_t *batch);
static void ngx_http_redis_ratelimit_batch_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static ngx_int_t ngx_http_redis_ratelimit_batch_resend(rrl_batch_t *batch,
    ngx_http_redis_ratelimit_node_t *node);
static ngx_int_t ngx_http_redis_ratelimit_batch_redirect(rrl_batch_t *batch,
    redisReply *rr, ngx_uint_t kind);
static void ngx_http_redis_ratelimit_batch_answer(rrl_batch_t *batch,
    redisReply *rr);
static void ngx_http_redis_ratelimit_batch_fail(rrl_batch_t *batch,
    const char *fmt, ...);
static void ngx_http_redis_ratelimit_batch_parts(rrl_batch_t *batch,
    redisReply *rr, u_char *error, size_t len);
static void ngx_http_redis_ratelimit_batch_unsent(rrl_batch_t *batch,
    ngx_uint_t failed);
static ngx_int_t ngx_http_redis_ratelimit_part_out(rrl_call_t *parts,
    ngx_uint_t part);
static void ngx_http_redis_ratelimit_part_unsent(rrl_call_t *parts,
    ngx_uint_t part);


static ngx_http_redis_ratelimit_batches_t  ngx_http_redis_ratelimit_batches;


ngx_int_t
ngx_http_redis_ratelimit_batch_init(ngx_log_t *log, ngx_queue_t *nodes,
    ngx_str_t *sha, ngx_http_redis_ratelimit_batch_handlers_t *handlers)
{
    ngx_http_redis_ratelimit_batches_t  *bs = &ngx_http_redis_ratelimit_batches;

    ngx_memzero(bs, sizeof(ngx_http_redis_ratelimit_batches_t));

    bs->up = *handlers;
    bs->nodes = nodes;
    bs->sha = sha;

    bs->open = rrl_batches_new();
    if (bs->open == NULL) {
        return NGX_ERROR;
    }

    bs->flush.handler = ngx_http_redis_ratelimit_flush_handler;
    bs->flush.log = log;

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_batch_exit(void)
{
    ngx_event_t  *flush = &ngx_http_redis_ratelimit_batches.flush;

    if (flush->posted) {
        ngx_delete_posted_event(flush);
    }
}


/*
 * Adds the part to the open batch of its node and slot, or to a new one;
 * the batches are sent when the turn of the event loop ends (a posted
 * event runs after the others), or at once when full.
 */

ngx_int_t
ngx_http_redis_ratelimit_batch_add(rrl_call_t *parts, ngx_uint_t part)
{
    int                                  rc, created;
    rrl_batch_t                         *batch;
    ngx_http_redis_ratelimit_node_t     *node;
    ngx_http_redis_ratelimit_batches_t  *bs = &ngx_http_redis_ratelimit_batches;

    node = rrl_call_node(parts, part);

    batch = rrl_batches_get(bs->open, node, rrl_call_slot(parts, part),
                            &created);
    if (batch == NULL) {
        ngx_http_redis_ratelimit_part_unsent(parts, part);
        return NGX_ERROR;
    }

    if (created) {
        node->batches++;

        if (!bs->flush.posted) {
            ngx_post_event(&bs->flush, &ngx_posted_events);
        }
    }

    rc = rrl_batch_add(batch, parts, part, parts);

    if (rc == RRL_ERROR) {
        ngx_http_redis_ratelimit_part_unsent(parts, part);
        return NGX_ERROR;
    }

    if (rc == 1) {
        /* full */
        rrl_batches_take(bs->open, batch);
        ngx_http_redis_ratelimit_batch_send(batch);
    }

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_flush_handler(ngx_event_t *ev)
{
    rrl_batch_t                         *batch;
    ngx_event_t                         *wev;
    ngx_queue_t                         *q;
    ngx_http_redis_ratelimit_node_t     *node;
    ngx_http_redis_ratelimit_batches_t  *bs = &ngx_http_redis_ratelimit_batches;

    while ((batch = rrl_batches_pop(bs->open)) != NULL) {
        ngx_http_redis_ratelimit_batch_send(batch);
    }

    /*
     * write now rather than after the other posted events (responses to
     * clients, mostly): Redis runs the batches while the worker writes
     * them; a failed write may free a context, never a node
     */

    for (q = ngx_queue_head(bs->nodes);
         q != ngx_queue_sentinel(bs->nodes);
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
    rrl_call_t                       *parts;
    const char                       *command;
    ngx_http_redis_ratelimit_node_t  *node;

    node = ngx_http_redis_ratelimit_batch_node(batch);

    /* out of the open batches: the node may only be waited on now */
    node->batches--;

    /* a request gone (or timed out) in the meantime is not sent */

    for (i = 0; i < rrl_batch_size(batch); /* void */ ) {
        parts = rrl_batch_data(batch, i);
        part = rrl_batch_part(batch, i);

        if (rrl_call_awaited(parts, part)) {
            i++;
            continue;
        }

        ngx_http_redis_ratelimit_part_unsent(parts, part);
        rrl_batch_remove(batch, i);
        (void) ngx_http_redis_ratelimit_part_out(parts, part);
    }

    if (rrl_batch_size(batch) == 0) {
        rrl_batch_free(batch);
        return;
    }

    if (node->ac == NULL) {
        ngx_http_redis_ratelimit_batch_unsent(batch, 1);
        ngx_http_redis_ratelimit_batch_fail(batch, "no connection");
        return;
    }

    sha = ngx_http_redis_ratelimit_batches.sha;

    command = rrl_batch_command(batch, (char *) sha->data, sha->len, &len);
    if (command == NULL) {
        ngx_http_redis_ratelimit_batch_unsent(batch, 0);
        ngx_http_redis_ratelimit_batch_fail(batch, "no memory");
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

    ngx_http_redis_ratelimit_batch_unsent(batch, 1);
    ngx_http_redis_ratelimit_batch_fail(batch, "cannot send: %s",
                                        (node->ac && node->ac->errstr[0])
                                        ? node->ac->errstr : "closing");
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
        if (ngx_http_redis_ratelimit_batch_redirect(batch, rr, kind)
            == NGX_OK)
        {
            ngx_http_redis_ratelimit_node_idle(node);
            return;
        }

        break;
    }

    ngx_http_redis_ratelimit_batch_answer(batch, rr);

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
 * MOVED or ASK of the batch's slot: the link names the node it goes to
 * now; after ASK (the keys are being migrated), after ASKING.
 */

static ngx_int_t
ngx_http_redis_ratelimit_batch_redirect(rrl_batch_t *batch, redisReply *rr,
    ngx_uint_t kind)
{
    unsigned                          slot, port;
    ngx_http_redis_ratelimit_node_t  *node;
    char                              host[RRL_HOST_MAX];

    if (rrl_reply_redirect(rr->str, rr->len, &slot, host, &port) != RRL_OK
        || slot != rrl_batch_slot(batch))
    {
        return NGX_ERROR;
    }

    node = ngx_http_redis_ratelimit_batches.up.redirect(
                                  ngx_http_redis_ratelimit_batch_node(batch),
                                  kind, slot, (u_char *) host,
                                  (in_port_t) port);
    if (node == NULL) {
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


/* each part waiting gets its request's share of the reply; frees batch */

static void
ngx_http_redis_ratelimit_batch_answer(rrl_batch_t *batch, redisReply *rr)
{
    size_t   i, len;
    u_char   text[128];

    if (rr == NULL) {
        ngx_http_redis_ratelimit_batch_fail(batch, "connection lost");
        return;
    }

    if (rr->type == REDIS_REPLY_ERROR) {
        ngx_http_redis_ratelimit_batches.up.ask(
                      rrl_retry_ask(rrl_reply_error_kind(rr->str, rr->len)));

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

    ngx_http_redis_ratelimit_batch_parts(batch, rr, NULL, 0);
}


/* every part waiting fails, the first failure telling; frees the batch */

static void
ngx_http_redis_ratelimit_batch_fail(rrl_batch_t *batch, const char *fmt,
    ...)
{
    u_char   *p;
    va_list   args;
    u_char    error[128];

    va_start(args, fmt);
    p = ngx_vslprintf(error, error + sizeof(error), fmt, args);
    va_end(args);

    ngx_http_redis_ratelimit_batch_parts(batch, NULL, error, p - error);
}


/* each part waiting is answered: its share of rr, or error; then freed */

static void
ngx_http_redis_ratelimit_batch_parts(rrl_batch_t *batch, redisReply *rr,
    u_char *error, size_t len)
{
    size_t       i, j, k, n, part;
    int64_t     *values;
    rrl_call_t  *parts;

    for (i = 0; i < rrl_batch_size(batch); i++) {
        parts = rrl_batch_data(batch, i);
        part = rrl_batch_part(batch, i);

        if (ngx_http_redis_ratelimit_part_out(parts, part) != NGX_OK) {
            continue;
        }

        if (rr) {
            k = rrl_batch_share(batch, i);
            n = rrl_call_values(parts, part);
            values = rrl_call_reply(parts, part);

            for (j = 0; j < n; j++) {
                values[j] = rr->element[k + j]->integer;
            }
        }

        ngx_http_redis_ratelimit_batches.up.answered(parts, part, error,
                                                     len);
    }

    rrl_batch_free(batch);
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
        ngx_http_redis_ratelimit_metrics_error(RRL_METRICS_ERR_CONNECTION);

        if (rrl_batch_count(batch)) {
            ngx_http_redis_ratelimit_circuit_outcome(
                                  ngx_http_redis_ratelimit_batch_node(batch),
                                  0);
        }

        return;
    }

    for (i = 0; i < rrl_batch_size(batch); i++) {
        ngx_http_redis_ratelimit_part_unsent(rrl_batch_data(batch, i),
                                             rrl_batch_part(batch, i));
    }
}


/*
 * Takes the part out of its batch. NGX_DECLINED: nobody waits for it any
 * more, as its request went away (and its arguments with the request's
 * pool) or timed out; the link may free its call.
 */

static ngx_int_t
ngx_http_redis_ratelimit_part_out(rrl_call_t *parts, ngx_uint_t part)
{
    if (rrl_call_out(parts, part)) {
        return NGX_OK;
    }

    ngx_http_redis_ratelimit_batches.up.out(parts);

    return NGX_DECLINED;
}


/*
 * A part that is not sent: the probe it holds, if the breaker has not seen
 * its outcome, is abandoned (the next call probes).
 */

static void
ngx_http_redis_ratelimit_part_unsent(rrl_call_t *parts, ngx_uint_t part)
{
    if (rrl_call_unsent(parts, part)) {
        ngx_http_redis_ratelimit_circuit_abandon(rrl_call_node(parts, part));
    }
}
