
/*
 * The glue of the worker's Redis engine (the core's rrl_engine.h): made
 * from the main conf in init_process, lent nginx's event loop, and freed
 * in exit_process; the handler's script calls go through it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


/* an event of the engine's: nginx's, then the engine's handler to run */
typedef struct {
    ngx_event_t                  event;       /* first: the engine's void * */
    void                       (*handler)(void *arg);
    void                        *arg;
} ngx_http_redis_ratelimit_loop_event_t;


static void ngx_http_redis_ratelimit_event_init(void *ev,
    void (*handler)(void *arg), void *arg, int cancelable);
static void ngx_http_redis_ratelimit_event_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_timer_add(void *ev, uint64_t ms);
static void ngx_http_redis_ratelimit_timer_del(void *ev);
static int ngx_http_redis_ratelimit_timer_set(const void *ev);
static void ngx_http_redis_ratelimit_set_cancelable(void *ev,
    int cancelable);
static void ngx_http_redis_ratelimit_post(void *ev);
static void ngx_http_redis_ratelimit_unpost(void *ev);
static uint64_t ngx_http_redis_ratelimit_msec(void);
static uint64_t ngx_http_redis_ratelimit_random(void);
static int ngx_http_redis_ratelimit_quitting(void);


/* this worker's engine (NULL: none in this process), and the loop lent */
static rrl_engine_t  *ngx_http_redis_ratelimit_worker_engine;

static rrl_loop_t  ngx_http_redis_ratelimit_loop = {
    sizeof(ngx_http_redis_ratelimit_loop_event_t),
    ngx_http_redis_ratelimit_event_init,
    ngx_http_redis_ratelimit_timer_add,
    ngx_http_redis_ratelimit_timer_del,
    ngx_http_redis_ratelimit_timer_set,
    ngx_http_redis_ratelimit_set_cancelable,
    ngx_http_redis_ratelimit_post,
    ngx_http_redis_ratelimit_unpost,
    ngx_http_redis_ratelimit_msec,
    ngx_http_redis_ratelimit_clock,
    ngx_http_redis_ratelimit_random,
    ngx_http_redis_ratelimit_quitting,
    ngx_http_redis_ratelimit_attach,
    ngx_http_redis_ratelimit_flush,
    ngx_http_redis_ratelimit_metrics_error,
    ngx_http_redis_ratelimit_metrics_reply
};


ngx_int_t
ngx_http_redis_ratelimit_link_init(ngx_cycle_t *cycle,
    ngx_http_redis_ratelimit_main_conf_t *rmcf)
{
    rrl_engine_conf_t  conf;

    /* the server's, made at configuration, and what is known by now */
    conf = rmcf->engine;
    conf.addrs = rmcf->addrs.elts;
    conf.naddrs = rmcf->addrs.nelts;
    conf.server = (char *) rmcf->server.data;
    conf.server_len = rmcf->server.len;
    conf.sha = (char *) rmcf->script_sha1.data;
    conf.sha_len = rmcf->script_sha1.len;

    ngx_http_redis_ratelimit_worker_engine = rrl_engine_new(&conf,
                                               &ngx_http_redis_ratelimit_loop);
    if (ngx_http_redis_ratelimit_worker_engine == NULL) {
        return NGX_ERROR;
    }

    ngx_http_redis_ratelimit_metrics_gauges(
                                       ngx_http_redis_ratelimit_worker_engine);

    return NGX_OK;
}


void
ngx_http_redis_ratelimit_link_exit(void)
{
    ngx_http_redis_ratelimit_metrics_gauges(NULL);
    rrl_engine_free(ngx_http_redis_ratelimit_worker_engine);
    ngx_http_redis_ratelimit_worker_engine = NULL;
}


rrl_engine_call_t *
ngx_http_redis_ratelimit_call(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx, rrl_engine_done_pt done)
{
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);

    return rrl_engine_call(ngx_http_redis_ratelimit_worker_engine,
                           (char *) rmcf->script_sha1.data,
                           rmcf->script_sha1.len, ctx->request, done, r, ctx);
}


rrl_engine_t *
ngx_http_redis_ratelimit_engine(void)
{
    return ngx_http_redis_ratelimit_worker_engine;
}


/* the loop's hooks */

static void
ngx_http_redis_ratelimit_event_init(void *ev, void (*handler)(void *arg),
    void *arg, int cancelable)
{
    ngx_http_redis_ratelimit_loop_event_t  *le = ev;

    ngx_memzero(le, sizeof(ngx_http_redis_ratelimit_loop_event_t));

    le->event.handler = ngx_http_redis_ratelimit_event_handler;
    le->event.data = le;
    le->event.log = ngx_cycle->log;
    le->event.cancelable = cancelable ? 1 : 0;
    le->handler = handler;
    le->arg = arg;
}


static void
ngx_http_redis_ratelimit_event_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_loop_event_t  *le = ev->data;

    le->handler(le->arg);
}


static void
ngx_http_redis_ratelimit_timer_add(void *ev, uint64_t ms)
{
    ngx_add_timer(ev, (ngx_msec_t) ms);
}


static void
ngx_http_redis_ratelimit_timer_del(void *ev)
{
    if (((ngx_event_t *) ev)->timer_set) {
        ngx_del_timer(ev);
    }
}


static int
ngx_http_redis_ratelimit_timer_set(const void *ev)
{
    return ((const ngx_event_t *) ev)->timer_set;
}


static void
ngx_http_redis_ratelimit_set_cancelable(void *ev, int cancelable)
{
    ((ngx_event_t *) ev)->cancelable = cancelable ? 1 : 0;
}


static void
ngx_http_redis_ratelimit_post(void *ev)
{
    ngx_post_event((ngx_event_t *) ev, &ngx_posted_events);
}


static void
ngx_http_redis_ratelimit_unpost(void *ev)
{
    if (((ngx_event_t *) ev)->posted) {
        ngx_delete_posted_event((ngx_event_t *) ev);
    }
}


static uint64_t
ngx_http_redis_ratelimit_msec(void)
{
    return ngx_current_msec;
}


static uint64_t
ngx_http_redis_ratelimit_random(void)
{
    return (uint64_t) ngx_random();
}


static int
ngx_http_redis_ratelimit_quitting(void)
{
    return ngx_exiting || ngx_terminate || ngx_quit;
}
