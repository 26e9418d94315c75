
/*
 * The per-worker Redis link: one hiredis async connection on nginx's event
 * loop, shared (pipelined) by every request of the worker, reconnected with
 * backoff when lost; and the script calls made on it, each with its own
 * timeout, that outlive their request if the client goes away.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include <sys/ioctl.h>

#include "ngx_http_redis_ratelimit_module.h"


#define NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MIN  50
#define NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MAX  500

/* our replies are a few hundred bytes: more buffered is a broken server */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED  (1024 * 1024)

#define NGX_HTTP_REDIS_RATELIMIT_CLOSED     0
#define NGX_HTTP_REDIS_RATELIMIT_OPEN       1
#define NGX_HTTP_REDIS_RATELIMIT_HALF_OPEN  2


typedef struct {
    ngx_http_redis_ratelimit_main_conf_t  *conf;
    ngx_log_t                   *log;

    redisAsyncContext           *ac;          /* NULL: not connected */
    ngx_connection_t            *connection;
    ngx_event_t                  connect_timer;
    ngx_event_t                  reconnect_timer;
    ngx_msec_t                   backoff;

    /* the circuit breaker */
    ngx_uint_t                   circuit;
    ngx_uint_t                   failures;    /* in a row */
    ngx_msec_t                   open_until;
    unsigned                     probing:1;   /* half open: one call out */
    unsigned                     dropping:1;  /* freeing a stuck context */

    ngx_uint_t                   parked;      /* calls with a request */
    ngx_uint_t                   in_flight;   /* calls hiredis holds */
    ngx_msec_t                   last_read;

    /* commands sent and replies read on this connection */
    uint64_t                     sent;
    uint64_t                     replies;
    unsigned                     unsolicited:1;

    unsigned                     connected:1;
    unsigned                     writing:1;   /* hiredis has output */
    unsigned                     edge:1;      /* edge-triggered events */
    unsigned                     exiting:1;
} ngx_http_redis_ratelimit_link_t;


struct ngx_http_redis_ratelimit_call_s {
    ngx_http_request_t          *request;     /* NULL once detached */
    ngx_http_redis_ratelimit_ctx_t   *ctx;
    ngx_http_redis_ratelimit_done_pt  done;
    ngx_event_t                  timer;       /* command timeout */
    ngx_event_t                  finish;      /* posted on the reply */
    unsigned                     in_redis:1;  /* hiredis holds privdata */
    unsigned                     retried:1;   /* after NOSCRIPT */
    unsigned                     counted:1;   /* the breaker saw its outcome */
    unsigned                     probe:1;     /* the half-open circuit's */
};


static void ngx_http_redis_ratelimit_connect(
    ngx_http_redis_ratelimit_link_t *link);
static void ngx_http_redis_ratelimit_schedule_reconnect(
    ngx_http_redis_ratelimit_link_t *link);
static void ngx_http_redis_ratelimit_reconnect_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_connect_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_on_connect(const redisAsyncContext *ac,
    int status);
static void ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac,
    void *reply, void *privdata);

static ngx_int_t ngx_http_redis_ratelimit_command(redisAsyncContext *ac,
    redisCallbackFn *fn, void *privdata, const char *format, ...);
static ngx_uint_t ngx_http_redis_ratelimit_solicited(
    const redisReadTask *task);
static void *ngx_http_redis_ratelimit_create_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_redis_ratelimit_create_array(const redisReadTask *task,
    int elements);
static void *ngx_http_redis_ratelimit_create_integer(
    const redisReadTask *task, long long value);
static void *ngx_http_redis_ratelimit_create_nil(const redisReadTask *task);
static void ngx_http_redis_ratelimit_free_object(void *obj);

static ngx_int_t ngx_http_redis_ratelimit_attach(
    ngx_http_redis_ratelimit_link_t *link, redisAsyncContext *ac);
static void ngx_http_redis_ratelimit_add_read(void *data);
static void ngx_http_redis_ratelimit_del_read(void *data);
static void ngx_http_redis_ratelimit_add_write(void *data);
static void ngx_http_redis_ratelimit_del_write(void *data);
static void ngx_http_redis_ratelimit_cleanup(void *data);
static void ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev);
static void ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev);

static ngx_int_t ngx_http_redis_ratelimit_send(
    ngx_http_redis_ratelimit_call_t *call);
static void ngx_http_redis_ratelimit_call_reply(redisAsyncContext *ac,
    void *reply, void *privdata);
static void ngx_http_redis_ratelimit_call_failed(
    ngx_http_redis_ratelimit_call_t *call, const char *fmt, ...);
static void ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_call_finish_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_redis_ratelimit_circuit_allows(
    ngx_http_redis_ratelimit_link_t *link, ngx_log_t *log);
static void ngx_http_redis_ratelimit_circuit_outcome(
    ngx_http_redis_ratelimit_call_t *call, ngx_uint_t ok);


static ngx_http_redis_ratelimit_link_t  ngx_http_redis_ratelimit_link;

/* hiredis' own reply constructors, wrapped to count replies */
static redisReplyObjectFunctions  *ngx_http_redis_ratelimit_hiredis_replies;

static redisReplyObjectFunctions  ngx_http_redis_ratelimit_replies = {
    ngx_http_redis_ratelimit_create_string,
    ngx_http_redis_ratelimit_create_array,
    ngx_http_redis_ratelimit_create_integer,
    ngx_http_redis_ratelimit_create_nil,
    ngx_http_redis_ratelimit_free_object
};


ngx_int_t
ngx_http_redis_ratelimit_link_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    ngx_memzero(link, sizeof(ngx_http_redis_ratelimit_link_t));

    link->conf = rmcf;
    link->log = cycle->log;
    link->edge = (ngx_event_flags & NGX_USE_CLEAR_EVENT) ? 1 : 0;

    link->connect_timer.handler =
                              ngx_http_redis_ratelimit_connect_timeout_handler;
    link->connect_timer.data = link;
    link->connect_timer.log = cycle->log;
    link->connect_timer.cancelable = 1;

    link->reconnect_timer.handler = ngx_http_redis_ratelimit_reconnect_handler;
    link->reconnect_timer.data = link;
    link->reconnect_timer.log = cycle->log;
    link->reconnect_timer.cancelable = 1;

    ngx_http_redis_ratelimit_connect(link);

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_link_exit(void)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    link->exiting = 1;

    if (link->connect_timer.timer_set) {
        ngx_del_timer(&link->connect_timer);
    }

    if (link->reconnect_timer.timer_set) {
        ngx_del_timer(&link->reconnect_timer);
    }

    if (link->ac) {
        /* runs pending callbacks with no reply, then the cleanup hook */
        redisAsyncFree(link->ac);
    }
}


static void
ngx_http_redis_ratelimit_connect(ngx_http_redis_ratelimit_link_t *link)
{
    size_t                                 len;
    const char                            *script;
    redisAsyncContext                     *ac;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = link->conf;

    /* the address is numeric (resolved at configuration): no DNS here */
    if (rmcf->unix_path.len) {
        ac = redisAsyncConnectUnix((char *) rmcf->unix_path.data);

    } else {
        ac = redisAsyncConnect((char *) rmcf->host.data, rmcf->port);
    }

    if (ac == NULL) {
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: cannot connect to %V: "
                                     "out of memory", &rmcf->server);
        goto retry;
    }

    if (ac->err) {
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: cannot connect to %V: "
                                     "%s", &rmcf->server, ac->errstr);
        redisAsyncFree(ac);
        goto retry;
    }

    if (ngx_http_redis_ratelimit_attach(link, ac) != NGX_OK) {
        redisAsyncFree(ac);
        goto retry;
    }

    redisAsyncSetConnectCallback(ac, ngx_http_redis_ratelimit_on_connect);

    /*
     * hiredis 0.14 assert()s on a reply that no command awaits: counting
     * replies as they are parsed, one too many fails the connection first
     */
    ngx_http_redis_ratelimit_hiredis_replies = ac->c.reader->fn;
    ac->c.reader->fn = &ngx_http_redis_ratelimit_replies;
    link->sent = 0;
    link->replies = 0;
    link->unsolicited = 0;

    /* queued now, written as soon as the connection is up */

    if (rmcf->password.len) {
        ngx_http_redis_ratelimit_command(ac,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "AUTH", "AUTH %b",
                                         rmcf->password.data,
                                         rmcf->password.len);
    }

    if (rmcf->db) {
        ngx_http_redis_ratelimit_command(ac,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "SELECT", "SELECT %d",
                                         (int) rmcf->db);
    }

    ngx_http_redis_ratelimit_command(ac, ngx_http_redis_ratelimit_setup_reply,
                                     "CLIENT SETNAME",
                                     "CLIENT SETNAME nginx-redis-ratelimit");

    script = rrl_script(&len);
    ngx_http_redis_ratelimit_command(ac, ngx_http_redis_ratelimit_setup_reply,
                                     "SCRIPT LOAD", "SCRIPT LOAD %b",
                                     script, len);

    ngx_add_timer(&link->connect_timer, rmcf->connect_timeout);

    return;

retry:

    ngx_http_redis_ratelimit_schedule_reconnect(link);
}


static void
ngx_http_redis_ratelimit_schedule_reconnect(
    ngx_http_redis_ratelimit_link_t *link)
{
    if (link->exiting || ngx_exiting || ngx_terminate || ngx_quit
        || link->reconnect_timer.timer_set)
    {
        return;
    }

    if (link->backoff == 0) {
        link->backoff = NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MIN;

    } else {
        link->backoff = ngx_min(link->backoff * 2,
                                NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MAX);
    }

    /* +-25% jitter: a fleet's workers do not reconnect in step */
    ngx_add_timer(&link->reconnect_timer,
                  link->backoff * 3 / 4
                  + (ngx_msec_t) ngx_random() % (link->backoff / 2 + 1));
}


static void
ngx_http_redis_ratelimit_reconnect_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_link_t  *link = ev->data;

    if (link->exiting || ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    ngx_http_redis_ratelimit_connect(link);
}


static void
ngx_http_redis_ratelimit_connect_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_link_t  *link = ev->data;

    ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: connecting to %V "
                                     "timed out", &link->conf->server);

    if (link->ac) {
        /* fails the queued calls; the cleanup hook schedules a retry */
        redisAsyncFree(link->ac);
    }
}


static void
ngx_http_redis_ratelimit_on_connect(const redisAsyncContext *ac, int status)
{
    ngx_http_redis_ratelimit_link_t  *link = ac->ev.data;

    if (status != REDIS_OK) {
        /* hiredis frees the context next: the cleanup hook logs and retries */
        return;
    }

    if (link->connect_timer.timer_set) {
        ngx_del_timer(&link->connect_timer);
    }

    link->connected = 1;
    link->backoff = 0;

    ngx_log_error(NGX_LOG_INFO, link->log, 0,
                  "redis_ratelimit: connected to %V", &link->conf->server);
}


static void
ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    redisReply                       *rr = reply;
    ngx_http_redis_ratelimit_link_t  *link = ac->ev.data;

    if (rr != NULL && rr->type == REDIS_REPLY_ERROR && link != NULL) {
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: %s on %V failed: %*s",
                                     (char *) privdata, &link->conf->server,
                                     (size_t) rr->len, rr->str);
    }
}


/* commands, and the replies they are owed */

static ngx_int_t
ngx_http_redis_ratelimit_command(redisAsyncContext *ac, redisCallbackFn *fn,
    void *privdata, const char *format, ...)
{
    int      rc;
    va_list  args;

    va_start(args, format);
    rc = redisvAsyncCommand(ac, fn, privdata, format, args);
    va_end(args);

    if (rc != REDIS_OK) {
        return NGX_ERROR;
    }

    ngx_http_redis_ratelimit_link.sent++;

    return NGX_OK;
}


static ngx_uint_t
ngx_http_redis_ratelimit_solicited(const redisReadTask *task)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (task->parent != NULL) {
        /* an element of a reply already counted */
        return 1;
    }

    if (++link->replies <= link->sent) {
        return 1;
    }

    /* NULL to the parser: it fails, and hiredis drops the connection */
    link->unsolicited = 1;

    return 0;
}


static void *
ngx_http_redis_ratelimit_create_string(const redisReadTask *task, char *str,
    size_t len)
{
    if (!ngx_http_redis_ratelimit_solicited(task)) {
        return NULL;
    }

    return ngx_http_redis_ratelimit_hiredis_replies->createString(task, str,
                                                                  len);
}


static void *
ngx_http_redis_ratelimit_create_array(const redisReadTask *task, int elements)
{
    if (!ngx_http_redis_ratelimit_solicited(task)) {
        return NULL;
    }

    return ngx_http_redis_ratelimit_hiredis_replies->createArray(task,
                                                                 elements);
}


static void *
ngx_http_redis_ratelimit_create_integer(const redisReadTask *task,
    long long value)
{
    if (!ngx_http_redis_ratelimit_solicited(task)) {
        return NULL;
    }

    return ngx_http_redis_ratelimit_hiredis_replies->createInteger(task,
                                                                   value);
}


static void *
ngx_http_redis_ratelimit_create_nil(const redisReadTask *task)
{
    if (!ngx_http_redis_ratelimit_solicited(task)) {
        return NULL;
    }

    return ngx_http_redis_ratelimit_hiredis_replies->createNil(task);
}


static void
ngx_http_redis_ratelimit_free_object(void *obj)
{
    ngx_http_redis_ratelimit_hiredis_replies->freeObject(obj);
}


/* the hiredis adapter */

static ngx_int_t
ngx_http_redis_ratelimit_attach(ngx_http_redis_ratelimit_link_t *link,
    redisAsyncContext *ac)
{
    ngx_connection_t  *c;

    if (ac->ev.data != NULL) {
        /* never two event loops on one context */
        return NGX_ERROR;
    }

    c = ngx_get_connection(ac->c.fd, link->log);
    if (c == NULL) {
        return NGX_ERROR;
    }

    c->data = link;
    c->log = link->log;
    c->read->log = link->log;
    c->write->log = link->log;
    c->read->handler = ngx_http_redis_ratelimit_read_handler;
    c->write->handler = ngx_http_redis_ratelimit_write_handler;

    if (link->edge) {
        /*
         * edge-triggered: registered once for both directions; hiredis does
         * its own recv() and send(), so readiness is tracked here
         */

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

    link->ac = ac;
    link->connection = c;
    link->connected = 0;
    link->writing = 0;

    ac->ev.data = link;
    ac->ev.addRead = ngx_http_redis_ratelimit_add_read;
    ac->ev.delRead = ngx_http_redis_ratelimit_del_read;
    ac->ev.addWrite = ngx_http_redis_ratelimit_add_write;
    ac->ev.delWrite = ngx_http_redis_ratelimit_del_write;
    ac->ev.cleanup = ngx_http_redis_ratelimit_cleanup;

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
    ngx_http_redis_ratelimit_link_t  *link = data;

    ngx_event_t  *rev;

    rev = link->connection->read;

    if (!link->edge && !rev->active) {
        (void) ngx_add_event(rev, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_redis_ratelimit_del_read(void *data)
{
    ngx_http_redis_ratelimit_link_t  *link = data;

    ngx_event_t  *rev;

    rev = link->connection->read;

    if (!link->edge && rev->active) {
        (void) ngx_del_event(rev, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_add_write(void *data)
{
    ngx_http_redis_ratelimit_link_t  *link = data;

    ngx_event_t  *wev;

    link->writing = 1;
    wev = link->connection->write;

    if (!link->edge) {
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
    ngx_http_redis_ratelimit_link_t  *link = data;

    ngx_event_t  *wev;

    link->writing = 0;
    wev = link->connection->write;

    if (!link->edge && wev->active) {
        (void) ngx_del_event(wev, NGX_WRITE_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_cleanup(void *data)
{
    ngx_http_redis_ratelimit_link_t  *link = data;

    ngx_connection_t   *c;
    redisAsyncContext  *ac;

    c = link->connection;
    ac = link->ac;

    if (c == NULL) {
        return;
    }

    if (!link->exiting && ac != NULL) {
        ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: connection to %V "
                                     "%s: %s", &link->conf->server,
                                     link->connected ? "lost" : "failed",
                                     link->unsolicited
                                         ? "a reply no command awaits"
                                         : ac->errstr[0] ? ac->errstr
                                                         : "closed");
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
    link->ac = NULL;
    link->connection = NULL;
    link->connected = 0;
    link->writing = 0;
    link->dropping = 0;

    if (link->connect_timer.timer_set) {
        ngx_del_timer(&link->connect_timer);
    }

    ngx_http_redis_ratelimit_schedule_reconnect(link);
}


static void
ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev)
{
    int                               n;
    ngx_connection_t                 *c;
    ngx_http_redis_ratelimit_link_t  *link;

    c = rev->data;
    link = c->data;

    link->last_read = ngx_current_msec;

    for ( ;; ) {
        /* may free the context: then the cleanup hook has nulled link->ac */
        redisAsyncHandleRead(link->ac);

        if (link->ac == NULL) {
            return;
        }

        if (link->ac->c.reader->len > NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED) {
            ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: %V sent a reply of "
                                     "over %uz bytes, reconnecting",
                                     &link->conf->server,
                                     (size_t) link->ac->c.reader->len);
            redisAsyncFree(link->ac);
            return;
        }

        if (!link->edge) {
            return;
        }

        /* edge-triggered: no new edge for data already queued */

        if (ioctl(c->fd, FIONREAD, &n) == -1 || n == 0) {
            break;
        }
    }

    if (rev->pending_eof) {
        /* the peer's FIN arrived with the last data: let hiredis see EOF */
        redisAsyncHandleRead(link->ac);
    }
}


static void
ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev)
{
    size_t                            pending;
    ngx_connection_t                 *c;
    ngx_http_redis_ratelimit_link_t  *link;

    c = wev->data;
    link = c->data;

    if (link->connected && !link->writing) {
        return;
    }

    for ( ;; ) {
        pending = sdslen(link->ac->c.obuf);

        redisAsyncHandleWrite(link->ac);

        if (link->ac == NULL || !link->edge || !link->writing) {
            return;
        }

        if (sdslen(link->ac->c.obuf) == pending) {
            /* the socket buffer is full: wait for the next edge */
            wev->ready = 0;
            return;
        }
    }
}


/* script calls */

ngx_http_redis_ratelimit_call_t *
ngx_http_redis_ratelimit_call(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, ngx_http_redis_ratelimit_done_pt done)
{
    ngx_http_redis_ratelimit_call_t  *call;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->ac == NULL) {
        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: no connection to %V",
                                     &link->conf->server);
        return NULL;
    }

    if (link->parked >= link->conf->max_parked) {
        /* a stalled Redis must not pile up requests without bound */
        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: %ui requests already "
                                     "wait for %V", link->parked,
                                     &link->conf->server);
        return NULL;
    }

    if (ngx_http_redis_ratelimit_circuit_allows(link, r->connection->log)
        != NGX_OK)
    {
        return NULL;
    }

    /* not in r->pool: hiredis may hold it after the request is gone */
    call = ngx_calloc(sizeof(ngx_http_redis_ratelimit_call_t),
                      r->connection->log);
    if (call == NULL) {
        return NULL;
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

    if (ngx_http_redis_ratelimit_send(call) != NGX_OK) {
        ngx_http_redis_ratelimit_log_failure(r->connection->log,
                                     "redis_ratelimit: cannot send to %V: %s",
                                     &link->conf->server,
                                     link->ac->errstr[0] ? link->ac->errstr
                                                         : "closing");
        ngx_free(call);
        return NULL;
    }

    if (link->circuit == NGX_HTTP_REDIS_RATELIMIT_HALF_OPEN) {
        call->probe = 1;
        link->probing = 1;
    }

    link->parked++;

    /* not cancelable: a graceful shutdown waits for parked requests */
    ngx_add_timer(&call->timer, link->conf->timeout);

    return call;
}


static ngx_int_t
ngx_http_redis_ratelimit_send(ngx_http_redis_ratelimit_call_t *call)
{
    ngx_http_redis_ratelimit_ctx_t   *ctx = call->ctx;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (link->ac == NULL
        || redisAsyncCommandArgv(link->ac,
                                 ngx_http_redis_ratelimit_call_reply, call,
                                 ctx->argc, ctx->argv, ctx->argvlen)
           != REDIS_OK)
    {
        return NGX_ERROR;
    }

    link->sent++;

    if (!call->in_redis) {
        call->in_redis = 1;
        link->in_flight++;
    }

    return NGX_OK;
}


static void
ngx_http_redis_ratelimit_call_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                              i, len;
    ngx_uint_t                          noscript;
    const char                         *script;
    redisReply                         *rr = reply;
    ngx_http_redis_ratelimit_call_t    *call = privdata;
    ngx_http_redis_ratelimit_result_t  *result;

    call->in_redis = 0;
    ngx_http_redis_ratelimit_link.in_flight--;

    noscript = (rr != NULL && rr->type == REDIS_REPLY_ERROR
                && rrl_reply_error_kind(rr->str, rr->len)
                   == RRL_REPLY_NOSCRIPT);

    /* a NOSCRIPT reply is Redis answering: no failure for the breaker */
    ngx_http_redis_ratelimit_circuit_outcome(call,
                     rr != NULL && (rr->type == REDIS_REPLY_ARRAY || noscript));

    if (call->request == NULL) {
        /*
         * the request is gone, or timed out: nobody waits for this, and its
         * arguments went with the request's pool
         */
        ngx_free(call);
        return;
    }

    if (noscript && !call->retried) {
        /* Redis lost the script (restart, SCRIPT FLUSH); it did not run */
        call->retried = 1;
        call->counted = 0;

        script = rrl_script(&len);

        if (ngx_http_redis_ratelimit_command(ac, NULL, NULL, "SCRIPT LOAD %b",
                                             script, len)
            == NGX_OK
            && ngx_http_redis_ratelimit_send(call) == NGX_OK)
        {
            return;
        }
    }

    if (rr == NULL) {
        ngx_http_redis_ratelimit_call_failed(call, "connection lost");
        return;
    }

    if (rr->type == REDIS_REPLY_ERROR) {
        ngx_http_redis_ratelimit_call_failed(call, "%*s", (size_t) rr->len,
                                             rr->str);
        return;
    }

    result = &call->ctx->result;

    if (rr->type != REDIS_REPLY_ARRAY || rr->elements > result->capacity) {
        ngx_http_redis_ratelimit_call_failed(call,
                                             "unexpected reply type %d",
                                             rr->type);
        return;
    }

    for (i = 0; i < rr->elements; i++) {
        if (rr->element[i]->type != REDIS_REPLY_INTEGER) {
            ngx_http_redis_ratelimit_call_failed(call,
                                               "unexpected element type %d",
                                               rr->element[i]->type);
            return;
        }

        result->values[i] = rr->element[i]->integer;
    }

    result->nvalues = rr->elements;
    result->rc = NGX_OK;

    /* resume the request from the event loop, not from inside hiredis */
    ngx_post_event(&call->finish, &ngx_posted_events);
}


static void
ngx_http_redis_ratelimit_call_failed(ngx_http_redis_ratelimit_call_t *call,
    const char *fmt, ...)
{
    va_list                             args;
    u_char                             *p;
    ngx_http_redis_ratelimit_result_t  *result;

    result = &call->ctx->result;

    va_start(args, fmt);
    p = ngx_vslprintf(result->error, result->error + sizeof(result->error),
                      fmt, args);
    va_end(args);

    result->error_len = p - result->error;
    result->rc = NGX_ERROR;

    if (!call->finish.posted) {
        ngx_post_event(&call->finish, &ngx_posted_events);
    }
}


static void
ngx_http_redis_ratelimit_call_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_call_t  *call = ev->data;

    ngx_uint_t                          counted;
    ngx_http_redis_ratelimit_result_t  *result;

    result = &call->ctx->result;
    counted = call->counted;

    if (!call->finish.posted) {
        result->rc = NGX_ERROR;
        result->error_len = ngx_sprintf(result->error, "timed out after %M ms",
                                        ngx_http_redis_ratelimit_link
                                        .conf->timeout)
                            - result->error;
    }

    if (!counted) {
        /* before the request goes on: the breaker may drop the connection */
        call->counted = 1;
    }

    ngx_http_redis_ratelimit_call_finish_handler(&call->finish);

    /* the call may be freed by now: the breaker needs only the link */
    if (!counted) {
        ngx_http_redis_ratelimit_circuit_outcome(NULL, 0);
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

    ngx_http_redis_ratelimit_call_detach(call);

    done(r, ctx);
}


void
ngx_http_redis_ratelimit_call_detach(ngx_http_redis_ratelimit_call_t *call)
{
    if (call->timer.timer_set) {
        ngx_del_timer(&call->timer);
    }

    if (call->finish.posted) {
        ngx_delete_posted_event(&call->finish);
    }

    call->ctx->call = NULL;
    call->request = NULL;
    call->ctx = NULL;

    ngx_http_redis_ratelimit_link.parked--;

    if (!call->in_redis) {
        ngx_free(call);
    }
}


/*
 * The circuit breaker. Closed: calls go to Redis. After max_failures in a
 * row (timeouts, lost connections, error replies) it opens: for cooldown no
 * call is made and requests get the fail mode at once. Then, half open,
 * one call probes: its success closes the circuit, its failure opens it
 * again.
 */

static ngx_int_t
ngx_http_redis_ratelimit_circuit_allows(ngx_http_redis_ratelimit_link_t *link,
    ngx_log_t *log)
{
    switch (link->circuit) {

    case NGX_HTTP_REDIS_RATELIMIT_OPEN:
        if ((ngx_msec_int_t) (ngx_current_msec - link->open_until) < 0) {
            return NGX_DECLINED;
        }

        link->circuit = NGX_HTTP_REDIS_RATELIMIT_HALF_OPEN;
        link->probing = 0;

        /* fall through */

    case NGX_HTTP_REDIS_RATELIMIT_HALF_OPEN:
        return link->probing ? NGX_DECLINED : NGX_OK;

    default:
        return NGX_OK;
    }
}


static void
ngx_http_redis_ratelimit_circuit_outcome(ngx_http_redis_ratelimit_call_t *call,
    ngx_uint_t ok)
{
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    if (call) {
        if (call->counted) {
            return;
        }

        call->counted = 1;
    }

    if (call == NULL || call->probe) {
        /* a timed-out call may have been the probe */
        link->probing = 0;
    }

    if (ok) {
        link->failures = 0;

        if (link->circuit != NGX_HTTP_REDIS_RATELIMIT_CLOSED) {
            link->circuit = NGX_HTTP_REDIS_RATELIMIT_CLOSED;
            ngx_log_error(NGX_LOG_WARN, link->log, 0,
                          "redis_ratelimit: %V answers again, circuit closed",
                          &link->conf->server);
        }

        return;
    }

    link->failures++;

    if (link->circuit == NGX_HTTP_REDIS_RATELIMIT_CLOSED
        && link->failures < link->conf->max_failures)
    {
        return;
    }

    if (link->circuit == NGX_HTTP_REDIS_RATELIMIT_CLOSED) {
        ngx_log_error(NGX_LOG_WARN, link->log, 0,
                      "redis_ratelimit: %ui failures in a row on %V, "
                      "circuit open: the fail mode answers, a probe every %M ms",
                      link->failures, &link->conf->server,
                      link->conf->cooldown);
    }

    link->circuit = NGX_HTTP_REDIS_RATELIMIT_OPEN;
    link->open_until = ngx_current_msec + link->conf->cooldown;

    if (link->ac && !link->dropping && link->in_flight
        && ngx_current_msec - link->last_read >= link->conf->timeout)
    {
        /*
         * replies are owed and nothing was read for a whole timeout: the
         * connection is stuck (a blackholed server); start afresh, which
         * also frees what hiredis holds for the calls (their failures come
         * back here while the context is being freed)
         */
        link->dropping = 1;
        redisAsyncFree(link->ac);
    }
}


void
ngx_http_redis_ratelimit_log_failure(ngx_log_t *log, const char *fmt, ...)
{
    u_char      *p;
    va_list      args;
    u_char       msg[NGX_MAX_ERROR_STR];

    static time_t      last;
    static ngx_uint_t  suppressed;

    if (ngx_time() == last) {
        suppressed++;
        return;
    }

    last = ngx_time();

    va_start(args, fmt);
    p = ngx_vslprintf(msg, msg + sizeof(msg) - 64, fmt, args);
    va_end(args);

    if (suppressed) {
        p = ngx_sprintf(p, " (%ui similar errors suppressed)", suppressed);
        suppressed = 0;
    }

    ngx_log_error(NGX_LOG_ERR, log, 0, "%*s", (size_t) (p - msg), msg);
}
