
/*
 * A node: one hiredis async connection to one Redis (or Sentinel) address,
 * on nginx's event loop, reconnected with backoff while it is in use, with
 * its own circuit breaker.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include <sys/ioctl.h>

#include "ngx_http_redis_ratelimit_link.h"


#define NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MIN  50
#define NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MAX  500

/* our replies are a few hundred bytes: more buffered is a broken server */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_BUFFERED  (1024 * 1024)

/* a worker's nodes at most, and the name room of each: any host Redis names */
#define NGX_HTTP_REDIS_RATELIMIT_MAX_NODES  1024
#define NGX_HTTP_REDIS_RATELIMIT_NODE_ROOM                                    \
    (2 * RRL_HOST_MAX + sizeof("unix::65535"))


static ngx_http_redis_ratelimit_node_t *ngx_http_redis_ratelimit_node_unused(
    size_t room);
static void ngx_http_redis_ratelimit_schedule_reconnect(
    ngx_http_redis_ratelimit_node_t *node);
static void ngx_http_redis_ratelimit_reconnect_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_connect_timeout_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_on_connect(const redisAsyncContext *ac,
    int status);
static void ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac,
    void *reply, void *privdata);

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
    ngx_http_redis_ratelimit_node_t *node, redisAsyncContext *ac);
static void ngx_http_redis_ratelimit_add_read(void *data);
static void ngx_http_redis_ratelimit_del_read(void *data);
static void ngx_http_redis_ratelimit_add_write(void *data);
static void ngx_http_redis_ratelimit_del_write(void *data);
static void ngx_http_redis_ratelimit_cleanup(void *data);
static void ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev);
static void ngx_http_redis_ratelimit_write_handler(ngx_event_t *wev);


/* hiredis' own reply constructors, wrapped to count replies */
static redisReplyObjectFunctions  *ngx_http_redis_ratelimit_hiredis_replies;

static redisReplyObjectFunctions  ngx_http_redis_ratelimit_replies = {
    ngx_http_redis_ratelimit_create_string,
    ngx_http_redis_ratelimit_create_array,
    ngx_http_redis_ratelimit_create_integer,
    ngx_http_redis_ratelimit_create_nil,
    ngx_http_redis_ratelimit_free_object
};


/*
 * The node of an address, made on first use. hiredis may call back into a
 * node until its context is freed, and others keep pointers to nodes, so a
 * node is never freed before the worker exits; a new address takes over a
 * node out of use instead (no context, no timer, no call, in no map), and
 * the worker keeps at most NGX_HTTP_REDIS_RATELIMIT_MAX_NODES: a cluster or
 * a Sentinel naming ever new addresses does not grow it without bound.
 */

ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_node_get(ngx_uint_t role, u_char *host,
    in_port_t port, u_char *unix_path)
{
    u_char                           *p;
    size_t                            len, room;
    ngx_queue_t                      *q;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;
    ngx_http_redis_ratelimit_node_t  *node;

    if (unix_path == NULL && !ngx_http_redis_ratelimit_numeric((char *) host))
    {
        /* hiredis would resolve a name, blocking the worker */
        return NULL;
    }

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->role != role) {
            continue;
        }

        if (unix_path) {
            if (node->unix_path
                && ngx_strcmp(node->unix_path, unix_path) == 0)
            {
                return node;
            }

            continue;
        }

        if (node->unix_path == NULL && node->port == port
            && ngx_strcmp(node->host, host) == 0)
        {
            return node;
        }
    }

    len = ngx_strlen((char *) (unix_path ? unix_path : host));
    room = 2 * len + 1 + sizeof("unix::65535");

    node = ngx_http_redis_ratelimit_node_unused(room);

    if (node) {
        ngx_queue_remove(&node->queue);
        room = node->room;

    } else {
        if (link->nnodes >= NGX_HTTP_REDIS_RATELIMIT_MAX_NODES) {
            ngx_http_redis_ratelimit_log_failure(link->log,
                                     "redis_ratelimit: %ui addresses in use, "
                                     "none idle: %s:%d is not connected",
                                     link->nnodes,
                                     unix_path ? unix_path : host,
                                     (int) port);
            return NULL;
        }

        /* room for any address from Redis: the node may serve another */
        room = ngx_max(room, NGX_HTTP_REDIS_RATELIMIT_NODE_ROOM);

        node = ngx_alloc(sizeof(ngx_http_redis_ratelimit_node_t) + room,
                         link->log);
        if (node == NULL) {
            return NULL;
        }

        link->nnodes++;
    }

    ngx_memzero(node, sizeof(ngx_http_redis_ratelimit_node_t) + room);
    node->room = room;

    rrl_breaker_init(&node->breaker, link->conf->max_failures,
                     (int64_t) link->conf->cooldown);

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
    node->log = link->log;

    node->connect_timer.handler =
                              ngx_http_redis_ratelimit_connect_timeout_handler;
    node->connect_timer.data = node;
    node->connect_timer.log = link->log;
    node->connect_timer.cancelable = 1;

    node->reconnect_timer.handler = ngx_http_redis_ratelimit_reconnect_handler;
    node->reconnect_timer.data = node;
    node->reconnect_timer.log = link->log;
    node->reconnect_timer.cancelable = 1;

    ngx_queue_insert_tail(&link->nodes, &node->queue);

    return node;
}


/* a node of a Redis that nothing uses or points to, with room enough */

static ngx_http_redis_ratelimit_node_t *
ngx_http_redis_ratelimit_node_unused(size_t room)
{
    ngx_queue_t                      *q;
    ngx_http_redis_ratelimit_node_t  *node;
    ngx_http_redis_ratelimit_link_t  *link = &ngx_http_redis_ratelimit_link;

    for (q = ngx_queue_head(&link->nodes);
         q != ngx_queue_sentinel(&link->nodes);
         q = ngx_queue_next(q))
    {
        node = ngx_queue_data(q, ngx_http_redis_ratelimit_node_t, queue);

        if (node->role == NGX_HTTP_REDIS_RATELIMIT_DATA
            && node->ac == NULL && !node->reconnect && !node->mapped
            && node->in_flight == 0 && node->batches == 0
            && !node->connect_timer.timer_set
            && !node->reconnect_timer.timer_set
            && node != link->primary && node->room >= room)
        {
            return node;
        }
    }

    return NULL;
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
    if (!node->reconnect && node->used && node->in_flight == 0
        && node->ac != NULL && !node->dropping
        && !ngx_http_redis_ratelimit_link.exiting)
    {
        ngx_log_error(NGX_LOG_INFO, node->log, 0,
                      "redis_ratelimit: %V is no more in use, closing",
                      &node->name);

        node->dropping = 1;

        /* inside a hiredis callback, the free is deferred to its end */
        redisAsyncFree(node->ac);
    }
}


void
ngx_http_redis_ratelimit_node_close(ngx_http_redis_ratelimit_node_t *node)
{
    node->reconnect = 0;

    if (node->connect_timer.timer_set) {
        ngx_del_timer(&node->connect_timer);
    }

    if (node->reconnect_timer.timer_set) {
        ngx_del_timer(&node->reconnect_timer);
    }

    if (node->ac) {
        /* runs pending callbacks with no reply, then the cleanup hook */
        redisAsyncFree(node->ac);
    }
}


void
ngx_http_redis_ratelimit_node_connect(ngx_http_redis_ratelimit_node_t *node)
{
    redisAsyncContext                     *ac;
    ngx_http_redis_ratelimit_link_t       *link;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    link = &ngx_http_redis_ratelimit_link;
    rmcf = link->conf;

    if (node->ac || link->exiting || ngx_exiting || ngx_terminate || ngx_quit)
    {
        return;
    }

    if (node->reconnect_timer.timer_set) {
        ngx_del_timer(&node->reconnect_timer);
    }

    /* the address is numeric (resolved at configuration): no DNS here */
    if (node->unix_path) {
        ac = redisAsyncConnectUnix((char *) node->unix_path);

    } else {
        ac = redisAsyncConnect((char *) node->host, node->port);
    }

    if (ac == NULL) {
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: cannot connect to %V: "
                                     "out of memory", &node->name);
        goto failed;
    }

    if (ac->err) {
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: cannot connect to %V: "
                                     "%s", &node->name, ac->errstr);
        redisAsyncFree(ac);
        goto failed;
    }

    if (ngx_http_redis_ratelimit_attach(node, ac) != NGX_OK) {
        redisAsyncFree(ac);
        goto failed;
    }

    redisAsyncSetConnectCallback(ac, ngx_http_redis_ratelimit_on_connect);

    /*
     * hiredis 0.14 assert()s on a reply that no command awaits: counting
     * replies as they are parsed, one too many fails the connection first
     */
    ngx_http_redis_ratelimit_hiredis_replies = ac->c.reader->fn;
    ac->c.reader->fn = &ngx_http_redis_ratelimit_replies;
    ac->c.reader->privdata = node;
    node->sent = 0;
    node->replies = 0;
    node->unsolicited = 0;

    /* queued now, written as soon as the connection is up */

    if (node->role == NGX_HTTP_REDIS_RATELIMIT_SENTINEL) {
        if (rmcf->sentinel_password.len) {
            ngx_http_redis_ratelimit_command(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "AUTH", "AUTH %b",
                                         rmcf->sentinel_password.data,
                                         rmcf->sentinel_password.len);
        }

        goto connecting;
    }

    if (rmcf->username.len) {
        /* Redis 6 ACL */
        ngx_http_redis_ratelimit_command(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "AUTH", "AUTH %b %b",
                                         rmcf->username.data,
                                         rmcf->username.len,
                                         rmcf->password.data,
                                         rmcf->password.len);

    } else if (rmcf->password.len) {
        ngx_http_redis_ratelimit_command(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "AUTH", "AUTH %b",
                                         rmcf->password.data,
                                         rmcf->password.len);
    }

    if (rmcf->db) {
        ngx_http_redis_ratelimit_command(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "SELECT", "SELECT %d",
                                         (int) rmcf->db);
    }

    ngx_http_redis_ratelimit_command(node,
                                     ngx_http_redis_ratelimit_setup_reply,
                                     "CLIENT SETNAME",
                                     "CLIENT SETNAME nginx-redis-ratelimit");

    /* SCRIPT LOAD follows once these succeed: see ..._setup_reply() */

connecting:

    ngx_add_timer(&node->connect_timer, rmcf->connect_timeout);

    return;

failed:

    ngx_http_redis_ratelimit_schedule_reconnect(node);
    ngx_http_redis_ratelimit_node_lost(node);
}


static void
ngx_http_redis_ratelimit_schedule_reconnect(
    ngx_http_redis_ratelimit_node_t *node)
{
    if (!node->reconnect || ngx_http_redis_ratelimit_link.exiting
        || ngx_exiting || ngx_terminate || ngx_quit
        || node->reconnect_timer.timer_set)
    {
        return;
    }

    if (node->backoff == 0) {
        node->backoff = NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MIN;

    } else {
        node->backoff = ngx_min(node->backoff * 2,
                                NGX_HTTP_REDIS_RATELIMIT_BACKOFF_MAX);
    }

    /* +-25% jitter: a fleet's workers do not reconnect in step */
    ngx_add_timer(&node->reconnect_timer,
                  node->backoff * 3 / 4
                  + (ngx_msec_t) ngx_random() % (node->backoff / 2 + 1));
}


static void
ngx_http_redis_ratelimit_reconnect_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_node_t  *node = ev->data;

    if (!node->reconnect) {
        return;
    }

    ngx_http_redis_ratelimit_node_connect(node);
}


static void
ngx_http_redis_ratelimit_connect_timeout_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_node_t  *node = ev->data;

    ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: connecting to %V "
                                     "timed out", &node->name);

    if (node->ac) {
        /* fails the queued calls; the cleanup hook schedules a retry */
        redisAsyncFree(node->ac);
    }
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

    if (node->role == NGX_HTTP_REDIS_RATELIMIT_SENTINEL) {
        node->backoff = 0;
    }

    /* a Redis: once the setup is done, see ..._setup_reply() */

    ngx_log_error(NGX_LOG_INFO, node->log, 0,
                  "redis_ratelimit: connected to %V", &node->name);
}


static void
ngx_http_redis_ratelimit_setup_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    size_t                            len;
    const char                       *script, *command = privdata;
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
                                     command, &node->name, len, text);
        return;
    }

    if (ngx_strcmp(command, "CLIENT SETNAME") == 0) {
        /*
         * not before the setup is known good: Redis 7 drops a connection
         * not authenticated that sends an argument over 16 KB, and the
         * script may be that long; the error is then the clearer NOAUTH
         */
        script = rrl_script(&len);
        ngx_http_redis_ratelimit_command(node,
                                         ngx_http_redis_ratelimit_setup_reply,
                                         "SCRIPT LOAD", "SCRIPT LOAD %b",
                                         script, len);
        return;
    }

    if (ngx_strcmp(command, "SCRIPT LOAD") == 0) {
        /* a connection that works: a next failure backs off from the start */
        node->backoff = 0;
    }
}


/* commands, and the replies they are owed */

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

    if (rc != REDIS_OK) {
        return NGX_ERROR;
    }

    node->sent++;

    return NGX_OK;
}


ngx_int_t
ngx_http_redis_ratelimit_command_formatted(
    ngx_http_redis_ratelimit_node_t *node, redisCallbackFn *fn,
    void *privdata, const char *command, size_t len)
{
    if (node->ac == NULL
        || redisAsyncFormattedCommand(node->ac, fn, privdata, command, len)
           != REDIS_OK)
    {
        return NGX_ERROR;
    }

    node->sent++;

    return NGX_OK;
}


ngx_int_t
ngx_http_redis_ratelimit_command_argv(ngx_http_redis_ratelimit_node_t *node,
    redisCallbackFn *fn, void *privdata, int argc, const char **argv,
    const size_t *argvlen)
{
    if (node->ac == NULL
        || redisAsyncCommandArgv(node->ac, fn, privdata, argc, argv, argvlen)
           != REDIS_OK)
    {
        return NGX_ERROR;
    }

    node->sent++;

    return NGX_OK;
}


static ngx_uint_t
ngx_http_redis_ratelimit_solicited(const redisReadTask *task)
{
    ngx_http_redis_ratelimit_node_t  *node = task->privdata;

    if (task->parent != NULL) {
        /* an element of a reply already counted */
        return 1;
    }

    if (++node->replies <= node->sent) {
        return 1;
    }

    /* NULL to the parser: it fails, and hiredis drops the connection */
    node->unsolicited = 1;

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


/* the core parses a reply as its own tree, built in pool */

rrl_value_t *
ngx_http_redis_ratelimit_value(ngx_pool_t *pool, redisReply *reply)
{
    size_t        i;
    rrl_value_t  *v, *e;

    v = ngx_pcalloc(pool, sizeof(rrl_value_t));
    if (v == NULL) {
        return NULL;
    }

    switch (reply->type) {

    case REDIS_REPLY_STRING:
        v->type = RRL_VALUE_STRING;
        break;

    case REDIS_REPLY_STATUS:
        v->type = RRL_VALUE_STATUS;
        break;

    case REDIS_REPLY_ERROR:
        v->type = RRL_VALUE_ERROR;
        break;

    case REDIS_REPLY_INTEGER:
        v->type = RRL_VALUE_INTEGER;
        v->integer = reply->integer;
        return v;

    case REDIS_REPLY_ARRAY:
        v->type = RRL_VALUE_ARRAY;

        if (reply->elements == 0) {
            return v;
        }

        e = ngx_pcalloc(pool, reply->elements * sizeof(rrl_value_t));
        if (e == NULL) {
            return NULL;
        }

        for (i = 0; i < reply->elements; i++) {
            v = ngx_http_redis_ratelimit_value(pool, reply->element[i]);
            if (v == NULL) {
                return NULL;
            }

            e[i] = *v;
        }

        v = ngx_pcalloc(pool, sizeof(rrl_value_t));
        if (v == NULL) {
            return NULL;
        }

        v->type = RRL_VALUE_ARRAY;
        v->elements = e;
        v->nelements = reply->elements;
        return v;

    default:
        v->type = RRL_VALUE_NIL;
        return v;
    }

    v->str = reply->str;
    v->len = reply->len;

    return v;
}


/* the hiredis adapter */

static ngx_int_t
ngx_http_redis_ratelimit_attach(ngx_http_redis_ratelimit_node_t *node,
    redisAsyncContext *ac)
{
    ngx_connection_t  *c;

    if (ac->ev.data != NULL) {
        /* never two event loops on one context */
        return NGX_ERROR;
    }

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

    if (ngx_http_redis_ratelimit_link.edge) {
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

    node->ac = ac;
    node->connection = c;
    node->connected = 0;
    node->writing = 0;
    node->dropping = 0;

    ac->ev.data = node;
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
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *rev;

    rev = node->connection->read;

    if (!ngx_http_redis_ratelimit_link.edge && !rev->active) {
        (void) ngx_add_event(rev, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_redis_ratelimit_del_read(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *rev;

    rev = node->connection->read;

    if (!ngx_http_redis_ratelimit_link.edge && rev->active) {
        (void) ngx_del_event(rev, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_add_write(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_event_t  *wev;

    node->writing = 1;
    wev = node->connection->write;

    if (!ngx_http_redis_ratelimit_link.edge) {
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

    ngx_event_t  *wev;

    node->writing = 0;
    wev = node->connection->write;

    if (!ngx_http_redis_ratelimit_link.edge && wev->active) {
        (void) ngx_del_event(wev, NGX_WRITE_EVENT, 0);
    }
}


static void
ngx_http_redis_ratelimit_cleanup(void *data)
{
    ngx_http_redis_ratelimit_node_t  *node = data;

    ngx_uint_t          dropped;
    ngx_connection_t   *c;
    redisAsyncContext  *ac;

    c = node->connection;
    ac = node->ac;

    if (c == NULL) {
        return;
    }

    dropped = (node->dropping && !node->reconnect);

    if (!ngx_http_redis_ratelimit_link.exiting && ac != NULL && !dropped) {
        ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: connection to %V "
                                     "%s: %s", &node->name,
                                     node->connected ? "lost" : "failed",
                                     node->unsolicited
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
    node->ac = NULL;
    node->connection = NULL;
    node->connected = 0;
    node->writing = 0;
    node->dropping = 0;

    if (node->connect_timer.timer_set) {
        ngx_del_timer(&node->connect_timer);
    }

    if (ngx_http_redis_ratelimit_link.exiting || dropped) {
        return;
    }

    ngx_http_redis_ratelimit_schedule_reconnect(node);
    ngx_http_redis_ratelimit_node_lost(node);
}


static void
ngx_http_redis_ratelimit_read_handler(ngx_event_t *rev)
{
    int                               n;
    ngx_connection_t                 *c;
    ngx_http_redis_ratelimit_node_t  *node;

    c = rev->data;
    node = c->data;

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

        if (!ngx_http_redis_ratelimit_link.edge) {
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
    ngx_connection_t                 *c;
    ngx_http_redis_ratelimit_node_t  *node;

    c = wev->data;
    node = c->data;

    if (node->connected && !node->writing) {
        return;
    }

    for ( ;; ) {
        pending = sdslen(node->ac->c.obuf);

        redisAsyncHandleWrite(node->ac);

        if (node->ac == NULL || !ngx_http_redis_ratelimit_link.edge
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
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_redis_ratelimit_link.conf;

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

    if (node->breaker.state == RRL_BREAKER_OPEN
        && node->ac && !node->dropping && node->in_flight
        && ngx_current_msec - node->last_read >= rmcf->timeout)
    {
        /*
         * replies are owed and nothing was read for a whole timeout: the
         * connection is stuck (a blackholed server); start afresh, which
         * also frees what hiredis holds for the calls (their failures come
         * back here while the context is being freed)
         */
        node->dropping = 1;
        redisAsyncFree(node->ac);
    }
}

