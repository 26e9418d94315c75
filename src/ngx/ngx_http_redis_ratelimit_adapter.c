
/*
 * hiredis on nginx's event loop: a node's context on an nginx connection,
 * its commands and the replies owed counted, replies converted for the
 * core; node->closed learns that the context is gone.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <sys/ioctl.h>

#include "ngx_http_redis_ratelimit_node.h"


/* our replies are a few hundred bytes: more buffered is a broken server */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED  (1024 * 1024)

/* edge-triggered events: hiredis does its own recv() and send() */
#define ngx_http_redis_ratelimit_edge()                                       \
    (ngx_event_flags & NGX_USE_CLEAR_EVENT)

#if (RRL_VALUE_STRING != REDIS_REPLY_STRING                                   \
     || RRL_VALUE_NIL != REDIS_REPLY_NIL                                      \
     || RRL_VALUE_ARRAY != REDIS_REPLY_ARRAY                                  \
     || RRL_VALUE_ERROR != REDIS_REPLY_ERROR                                  \
     || RRL_VALUE_INTEGER != REDIS_REPLY_INTEGER                              \
     || RRL_VALUE_STATUS != REDIS_REPLY_STATUS)
#error "the core's value types are no more hiredis' reply types"
#endif


static void ngx_http_redis_ratelimit_add_read(void *data);
static void ngx_http_redis_ratelimit_del_read(void *data);
static void ngx_http_redis_ratelimit_add_write(void *data);
static void ngx_http_redis_ratelimit_del_write(void *data);
static void ngx_http_redis_ratelimit_cleanup(void *data);
static void ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev);
static void ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev);

static ngx_int_t ngx_http_redis_ratelimit_sent(
    ngx_http_redis_ratelimit_node_t *node, int rc);
static void *ngx_http_redis_ratelimit_create_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_redis_ratelimit_create_array(const redisReadTask *task,
    int elements);
static void *ngx_http_redis_ratelimit_create_integer(
    const redisReadTask *task, long long value);
static void *ngx_http_redis_ratelimit_create_nil(const redisReadTask *task);
static ngx_int_t ngx_http_redis_ratelimit_fill(ngx_pool_t *pool,
    rrl_value_t *v, redisReply *reply);


/* hiredis' own reply constructors, wrapped to count replies */
static redisReplyObjectFunctions  *ngx_http_redis_ratelimit_hiredis_replies;

static redisReplyObjectFunctions  ngx_http_redis_ratelimit_replies = {
    ngx_http_redis_ratelimit_create_string,
    ngx_http_redis_ratelimit_create_array,
    ngx_http_redis_ratelimit_create_integer,
    ngx_http_redis_ratelimit_create_nil,
    freeReplyObject                         /* hiredis' own, as theirs */
};


ngx_int_t
ngx_http_redis_ratelimit_attach(ngx_http_redis_ratelimit_node_t *node,
    redisAsyncContext *ac, ngx_http_redis_ratelimit_closed_pt closed)
{
    ngx_connection_t  *c;

    c = ngx_get_connection(ac->c.fd, node->log);
    if (c == NULL) {
        return NGX_ERROR;
    }

    c->data = node;
    c->log = node->log;
    c->read->log = node->log;
    c->write->log = node->log;
    c->read->handler = ngx_http_redis_ratelimit_read_handler;
    c->write->handler = ngx_http_redis_ratelimit_write_handler;

    if (ngx_http_redis_ratelimit_edge()) {
        /* registered once for both directions; readiness is tracked here */

        if (ngx_add_conn) {
            if (ngx_add_conn(c) != NGX_OK) {
                goto failed;
            }

        } else if (ngx_add_event(c->read, NGX_READ_EVENT, NGX_CLEAR_EVENT)
                   != NGX_OK
                   || ngx_add_event(c->write, NGX_WRITE_EVENT,
                                    NGX_CLEAR_EVENT)
                      != NGX_OK)
        {
            goto failed;
        }
    }

    node->ac = ac;
    node->connection = c;
    node->closed = closed;
    node->writing = 0;

    ac->ev.data = node;
    ac->ev.addRead = ngx_http_redis_ratelimit_add_read;
    ac->ev.delRead = ngx_http_redis_ratelimit_del_read;
    ac->ev.addWrite = ngx_http_redis_ratelimit_add_write;
    ac->ev.delWrite = ngx_http_redis_ratelimit_del_write;
    ac->ev.cleanup = ngx_http_redis_ratelimit_cleanup;

    /*
     * hiredis 0.14 assert()s on a reply that no command awaits: counting
     * replies as they are parsed, one too many fails the connection first
     */
    ngx_http_redis_ratelimit_hiredis_replies = ac->c.reader->fn;
    ac->c.reader->fn = &ngx_http_redis_ratelimit_replies;
    ac->c.reader->privdata = node;
    rrl_reply_count_init(&node->count);

    return NGX_OK;

failed:

    /* the fd stays hiredis's to close */
    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;

    return NGX_ERROR;
}


static void
ngx_http_redis_ratelimit_add_read(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *rev = node->connection->read;

    if (!ngx_http_redis_ratelimit_edge() && !rev->active) {
        (void) ngx_add_event(rev, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_redis_ratelimit_del_read(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *rev = node->connection->read;

    if (!ngx_http_redis_ratelimit_edge() && rev->active) {
        (void) ngx_del_event(rev, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_add_write(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *wev = node->connection->write;

    node->writing = 1;

    if (!ngx_http_redis_ratelimit_edge()) {
        if (!wev->active) {
            (void) ngx_add_event(wev, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
        }

        return;
    }

    /*
     * The socket was writable at the last edge, so no new edge will come:
     * write at the end of this loop iteration, together with every command
     * queued until then (pipelining).
     */

    if (wev->ready && !wev->posted) {
        ngx_post_event(wev, &ngx_posted_events);
    }
}


static void
ngx_http_redis_ratelimit_del_write(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *wev = node->connection->write;

    node->writing = 0;

    if (!ngx_http_redis_ratelimit_edge() && wev->active) {
        (void) ngx_del_event(wev, NGX_WRITE_EVENT, 0);
    }
}


/* the context is being freed: once, whatever frees it */

static void
ngx_http_redis_ratelimit_cleanup(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_connection_t   *c = node->connection;
    redisAsyncContext  *ac = node->ac;

    if (c == NULL) {
        return;
    }

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    /* hiredis closes the fd right after this: no epoll_ctl() needed */

    if (ngx_del_conn) {
        (void) ngx_del_conn(c, NGX_CLOSE_EVENT);

    } else {
        if (c->read->active) {
            (void) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
        }

        if (c->write->active) {
            (void) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
        }
    }

    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;

    ac->ev.data = NULL;
    node->ac = NULL;
    node->connection = NULL;
    node->writing = 0;

    node->closed(node, node->count.unsolicited ? "a reply no command awaits"
                       : ac->errstr[0] ? ac->errstr : "closed");
}


static void
ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev)
{
    int                               n;
    ngx_connection_t                 *c = rev->data;
    ngx_http_redis_ratelimit_node_t  *node = c->data;

    node->last_read = ngx_current_msec;

    for ( ;; ) {
        /* may free the context: then the cleanup hook has nulled node->ac */
        redisAsyncHandleRead(node->ac);

        if (node->ac == NULL) {
            return;
        }

        if (node->ac->c.reader->len > NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED) {
            ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: %V sent a reply of "
                                     "over %uz bytes, reconnecting",
                                     &node->name,
                                     (size_t) node->ac->c.reader->len);
            redisAsyncFree(node->ac);
            return;
        }

        if (!ngx_http_redis_ratelimit_edge()) {
            return;
        }

        /* edge-triggered: no new edge for data already queued */

        if (ioctl(c->fd, FIONREAD, &n) == -1 || n == 0) {
            break;
        }
    }

    if (rev->pending_eof) {
        /* the peer's FIN arrived with the last data: let hiredis see EOF */
        redisAsyncHandleRead(node->ac);
    }
}


static void
ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev)
{
    size_t                            pending;
    ngx_connection_t                 *c = wev->data;
    ngx_http_redis_ratelimit_node_t  *node = c->data;

    if (node->connected && !node->writing) {
        return;
    }

    for ( ;; ) {
        pending = sdslen(node->ac->c.obuf);

        redisAsyncHandleWrite(node->ac);

        if (node->ac == NULL || !ngx_http_redis_ratelimit_edge()
            || !node->writing)
        {
            return;
        }

        if (sdslen(node->ac->c.obuf) == pending) {
            /* the socket buffer is full: wait for the next edge */
            wev->ready = 0;
            return;
        }
    }
}


/* commands, each owed a reply */

ngx_int_t
ngx_http_redis_ratelimit_command(ngx_http_redis_ratelimit_node_t *node,
    redisCallbackFn *fn, void *privdata, const char *format, ...)
{
    int      rc;
    va_list  args;

    if (node->ac == NULL) {
        return NGX_ERROR;
    }

    va_start(args, format);
    rc = redisvAsyncCommand(node->ac, fn, privdata, format, args);
    va_end(args);

    return ngx_http_redis_ratelimit_sent(node, rc);
}


ngx_int_t
ngx_http_redis_ratelimit_command_formatted(
    ngx_http_redis_ratelimit_node_t *node, redisCallbackFn *fn,
    void *privdata, const char *command, size_t len)
{
    return ngx_http_redis_ratelimit_sent(node, node->ac == NULL ? REDIS_ERR
                   : redisAsyncFormattedCommand(node->ac, fn, privdata,
                                                command, len));
}


ngx_int_t
ngx_http_redis_ratelimit_command_argv(ngx_http_redis_ratelimit_node_t *node,
    redisCallbackFn *fn, void *privdata, int argc, const char **argv,
    const size_t *argvlen)
{
    return ngx_http_redis_ratelimit_sent(node, node->ac == NULL ? REDIS_ERR
                   : redisAsyncCommandArgv(node->ac, fn, privdata, argc, argv,
                                           argvlen));
}


static ngx_int_t
ngx_http_redis_ratelimit_sent(ngx_http_redis_ratelimit_node_t *node, int rc)
{
    if (rc != REDIS_OK) {
        return NGX_ERROR;
    }

    rrl_reply_count_sent(&node->count);

    return NGX_OK;
}


/* NULL to the parser for a reply no command awaits: hiredis drops it */

#define ngx_http_redis_ratelimit_solicited(task)                              \
    rrl_reply_count_read(                                                     \
        &((ngx_http_redis_ratelimit_node_t *) (task)->privdata)->count,       \
        (task)->parent != NULL)


static void *
ngx_http_redis_ratelimit_create_string(const redisReadTask *task, char *str,
    size_t len)
{
    return ngx_http_redis_ratelimit_solicited(task)
           ? ngx_http_redis_ratelimit_hiredis_replies->createString(task, str,
                                                                    len)
           : NULL;
}


static void *
ngx_http_redis_ratelimit_create_array(const redisReadTask *task, int elements)
{
    return ngx_http_redis_ratelimit_solicited(task)
           ? ngx_http_redis_ratelimit_hiredis_replies->createArray(task,
                                                                   elements)
           : NULL;
}


static void *
ngx_http_redis_ratelimit_create_integer(const redisReadTask *task,
    long long value)
{
    return ngx_http_redis_ratelimit_solicited(task)
           ? ngx_http_redis_ratelimit_hiredis_replies->createInteger(task,
                                                                     value)
           : NULL;
}


static void *
ngx_http_redis_ratelimit_create_nil(const redisReadTask *task)
{
    return ngx_http_redis_ratelimit_solicited(task)
           ? ngx_http_redis_ratelimit_hiredis_replies->createNil(task)
           : NULL;
}


/* the core parses a reply as its own tree, built in pool */

rrl_value_t *
ngx_http_redis_ratelimit_value(ngx_pool_t *pool, redisReply *reply)
{
    rrl_value_t  *v;

    v = ngx_pcalloc(pool, sizeof(rrl_value_t));

    if (v == NULL || ngx_http_redis_ratelimit_fill(pool, v, reply) != NGX_OK) {
        return NULL;
    }

    return v;
}


static ngx_int_t
ngx_http_redis_ratelimit_fill(ngx_pool_t *pool, rrl_value_t *v,
    redisReply *reply)
{
    size_t        i;
    rrl_value_t  *e;

    /* hiredis zeroes what a type does not use */
    v->type = (reply->type >= REDIS_REPLY_STRING
               && reply->type <= REDIS_REPLY_ERROR)
              ? reply->type : RRL_VALUE_NIL;
    v->integer = reply->integer;
    v->str = reply->str;
    v->len = reply->len;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
        return NGX_OK;
    }

    e = ngx_pcalloc(pool, reply->elements * sizeof(rrl_value_t));
    if (e == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < reply->elements; i++) {
        if (ngx_http_redis_ratelimit_fill(pool, &e[i], reply->element[i])
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    v->elements = e;
    v->nelements = reply->elements;

    return NGX_OK;
}
