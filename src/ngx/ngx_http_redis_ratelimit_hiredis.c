
/*
 * hiredis on nginx's event loop: a context of the engine's on an nginx
 * connection (the loop's attach() and flush()); closed() learns that the
 * context is gone.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <sys/ioctl.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_redis_ratelimit_module.h"


/* our replies are a few hundred bytes: more buffered is a broken server */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED  (1024 * 1024)

/* edge-triggered events: hiredis does its own recv() and send() */
#define ngx_http_redis_ratelimit_edge()                                       \
    (ngx_event_flags & NGX_USE_CLEAR_EVENT)


/* a context on the loop (ac->ev.data, c->data): freed with the context */
typedef struct {
    redisAsyncContext           *ac;
    ngx_connection_t            *connection;
    void                       (*closed)(void *arg, const char *why);
    void                        *arg;
    unsigned                     writing:1;   /* hiredis has output */
} ngx_http_redis_ratelimit_conn_t;


static void ngx_http_redis_ratelimit_add_read(void *data);
static void ngx_http_redis_ratelimit_del_read(void *data);
static void ngx_http_redis_ratelimit_add_write(void *data);
static void ngx_http_redis_ratelimit_del_write(void *data);
static void ngx_http_redis_ratelimit_cleanup(void *data);
static void ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev);
static void ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev);


void *
ngx_http_redis_ratelimit_attach(redisAsyncContext *ac,
    void (*closed)(void *arg, const char *why), void *arg)
{
    ngx_connection_t                 *c;
    ngx_http_redis_ratelimit_conn_t  *conn;

    conn = ngx_alloc(sizeof(ngx_http_redis_ratelimit_conn_t), ngx_cycle->log);
    if (conn == NULL) {
        return NULL;
    }

    c = ngx_get_connection(ac->c.fd, ngx_cycle->log);
    if (c == NULL) {
        ngx_free(conn);
        return NULL;
    }

    c->data = conn;
    c->read->log = c->log;
    c->write->log = c->log;
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

    conn->ac = ac;
    conn->connection = c;
    conn->closed = closed;
    conn->arg = arg;
    conn->writing = 0;

    ac->ev.data = conn;
    ac->ev.addRead = ngx_http_redis_ratelimit_add_read;
    ac->ev.delRead = ngx_http_redis_ratelimit_del_read;
    ac->ev.addWrite = ngx_http_redis_ratelimit_add_write;
    ac->ev.delWrite = ngx_http_redis_ratelimit_del_write;
    ac->ev.cleanup = ngx_http_redis_ratelimit_cleanup;

    return conn;

failed:

    /* the fd stays hiredis's to close */
    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;
    ngx_free(conn);

    return NULL;
}


/* writes what hiredis has queued now, not at the end of the turn */

void
ngx_http_redis_ratelimit_flush(void *data)
{
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_event_t  *wev = conn->connection->write;

    if (wev->posted) {
        ngx_delete_posted_event(wev);
        wev->handler(wev);
    }
}


static void
ngx_http_redis_ratelimit_add_read(void *data)
{
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_event_t  *rev = conn->connection->read;

    if (!ngx_http_redis_ratelimit_edge() && !rev->active) {
        (void) ngx_add_event(rev, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_redis_ratelimit_del_read(void *data)
{
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_event_t  *rev = conn->connection->read;

    if (!ngx_http_redis_ratelimit_edge() && rev->active) {
        (void) ngx_del_event(rev, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_add_write(void *data)
{
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_event_t  *wev = conn->connection->write;

    conn->writing = 1;

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
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_event_t  *wev = conn->connection->write;

    conn->writing = 0;

    if (!ngx_http_redis_ratelimit_edge() && wev->active) {
        (void) ngx_del_event(wev, NGX_WRITE_EVENT, 0);
    }
}


/*
 * The context is being freed: once, whatever frees it. c is given back
 * after closed(), so a context made in closed() gets another, and a handler
 * that sees c->fd -1 knows that the context (and conn) is gone.
 */

static void
ngx_http_redis_ratelimit_cleanup(void *data)
{
    ngx_http_redis_ratelimit_conn_t  *conn = data;

    ngx_connection_t   *c = conn->connection;
    redisAsyncContext  *ac = conn->ac;

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

    conn->closed(conn->arg, ac->errstr[0] ? ac->errstr : "closed");

    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;
    ngx_free(conn);
}


static void
ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev)
{
    int                               n;
    u_char                           *p;
    ngx_connection_t                 *c = rev->data;
    ngx_http_redis_ratelimit_conn_t  *conn = c->data;

    redisAsyncContext  *ac = conn->ac;

    for ( ;; ) {
        redisAsyncHandleRead(ac);

        if (c->fd == (ngx_socket_t) -1) {
            /* the context is freed */
            return;
        }

        if (ac->c.reader->len > NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED) {
            /* why, for the engine's log of the connection lost */
            p = ngx_snprintf((u_char *) ac->c.errstr,
                             sizeof(ac->c.errstr) - 1,
                             "sent a reply of over %uz bytes",
                             (size_t) ac->c.reader->len);
            *p = '\0';

            redisAsyncFree(ac);
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
        redisAsyncHandleRead(ac);
    }
}


static void
ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev)
{
    size_t                            pending;
    ngx_connection_t                 *c = wev->data;
    ngx_http_redis_ratelimit_conn_t  *conn = c->data;

    redisAsyncContext  *ac = conn->ac;

    if ((ac->c.flags & REDIS_CONNECTED) && !conn->writing) {
        return;
    }

    for ( ;; ) {
        pending = sdslen(ac->c.obuf);

        redisAsyncHandleWrite(ac);

        if (c->fd == (ngx_socket_t) -1 || !ngx_http_redis_ratelimit_edge()
            || !conn->writing)
        {
            return;
        }

        if (sdslen(ac->c.obuf) == pending) {
            /* the socket buffer is full: wait for the next edge */
            wev->ready = 0;
            return;
        }
    }
}
