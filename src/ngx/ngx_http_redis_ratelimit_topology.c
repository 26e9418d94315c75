
/*
 * The topology question, shared by Cluster and Sentinel modes (a worker is
 * in one of them): one out at a time, sent when the core's refresher says,
 * to the node the mode names; its timeout and answer go back to the
 * refresher, the answer's content to the mode's parser.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_topology.h"


/* asks at most this often: a burst of MOVED replies or losses asks once */
#define NGX_HTTP_REDIS_RATELIMIT_ASK_MIN    100
#define NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY  500


typedef struct {
    ngx_event_t                          timer;      /* the refresher's */
    rrl_refresher_t                      refresher;  /* when to ask, whom */
    ngx_http_redis_ratelimit_question_t  question;
    ngx_http_redis_ratelimit_node_t     *asked;
} ngx_http_redis_ratelimit_topology_t;


static int ngx_http_redis_ratelimit_topology_send(void *data,
    uint64_t generation);
static void ngx_http_redis_ratelimit_topology_timer(void *data, uint64_t ms);
static void ngx_http_redis_ratelimit_topology_timer_handler(ngx_event_t *ev);
static void ngx_http_redis_ratelimit_topology_reply(redisAsyncContext *ac,
    void *reply, void *privdata);


static ngx_http_redis_ratelimit_topology_t  ngx_http_redis_ratelimit_topology;


void
ngx_http_redis_ratelimit_topology_init(ngx_log_t *log,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, rrl_refresher_conf_t *conf,
    ngx_http_redis_ratelimit_question_t *q)
{
    ngx_http_redis_ratelimit_topology_t  *t;

    t = &ngx_http_redis_ratelimit_topology;

    ngx_memzero(t, sizeof(ngx_http_redis_ratelimit_topology_t));

    t->question = *q;

    t->timer.handler = ngx_http_redis_ratelimit_topology_timer_handler;
    t->timer.data = t;
    t->timer.log = log;
    t->timer.cancelable = 1;

    conf->min_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_MIN;
    conf->retry_ms = NGX_HTTP_REDIS_RATELIMIT_ASK_RETRY;
    conf->timeout_ms = rmcf->connect_timeout + rmcf->timeout;
    conf->send = ngx_http_redis_ratelimit_topology_send;
    conf->timer = ngx_http_redis_ratelimit_topology_timer;
    conf->data = t;

    rrl_refresher_init(&t->refresher, conf);
}


void
ngx_http_redis_ratelimit_topology_want(void)
{
    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    rrl_refresher_want(&ngx_http_redis_ratelimit_topology.refresher,
                       (int64_t) ngx_current_msec);
}


void
ngx_http_redis_ratelimit_topology_exit(void)
{
    rrl_refresher_stop(&ngx_http_redis_ratelimit_topology.refresher);
}


static int
ngx_http_redis_ratelimit_topology_send(void *data, uint64_t generation)
{
    ngx_http_redis_ratelimit_topology_t  *t = data;

    ngx_http_redis_ratelimit_node_t  *node;

    node = t->question.target(&t->refresher, t->asked);

    if (node == NULL
        || ngx_http_redis_ratelimit_command_argv(node,
                                     ngx_http_redis_ratelimit_topology_reply,
                                     (void *) (uintptr_t) generation,
                                     t->question.argc, t->question.argv,
                                     t->question.argvlen)
           != NGX_OK)
    {
        return RRL_ERROR;
    }

    /* a node asked is not closed as idle before it answers */
    node->in_flight++;
    t->asked = node;

    return RRL_OK;
}


static void
ngx_http_redis_ratelimit_topology_timer(void *data, uint64_t ms)
{
    ngx_event_t  *timer = &ngx_http_redis_ratelimit_topology.timer;

    if (timer->timer_set) {
        ngx_del_timer(timer);
    }

    if (ms) {
        ngx_add_timer(timer, (ngx_msec_t) ms);
    }
}


static void
ngx_http_redis_ratelimit_topology_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_topology_t  *t = ev->data;

    if (!rrl_refresher_fired(&t->refresher)) {
        /* the delay before asking again is over, or the next poll is due */
        ngx_http_redis_ratelimit_topology_want();
        return;
    }

    ngx_http_redis_ratelimit_log_failure(ev->log, "redis_ratelimit: %s %V %s",
                                         t->question.asking, &t->asked->name,
                                         t->question.late);

    rrl_refresher_failed(&t->refresher);
}


static void
ngx_http_redis_ratelimit_topology_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    ngx_int_t                             rc;
    ngx_pool_t                           *pool;
    redisReply                           *rr = reply;
    rrl_value_t                          *value;
    ngx_http_redis_ratelimit_node_t      *node = ac->ev.data;
    ngx_http_redis_ratelimit_topology_t  *t;
    char                                  why[RRL_ANSWER_WHY_MAX];

    t = &ngx_http_redis_ratelimit_topology;

    node->in_flight--;

    if (!rrl_refresher_answer(&t->refresher, (uintptr_t) privdata)) {
        goto done;
    }

    why[0] = '\0';
    rc = NGX_ERROR;

    pool = ngx_create_pool(4096, node->log);

    if (pool) {
        value = rr ? ngx_http_redis_ratelimit_value(pool, rr) : NULL;

        if (rr == NULL || value) {
            rc = t->question.answer(node, value, pool, why);
        }

        ngx_destroy_pool(pool);
    }

    if (rc != NGX_OK) {
        if (why[0]) {
            /* else the core or the mode has logged it, or no memory */
            ngx_http_redis_ratelimit_log_failure(node->log,
                                     "redis_ratelimit: %s %V %s",
                                     t->question.asking, &node->name, why);
        }

        rrl_refresher_failed(&t->refresher);

    } else if (rrl_refresher_answered(&t->refresher)) {
        ngx_http_redis_ratelimit_topology_want();
    }

done:

    /* a seed out of the map is closed once it has answered */
    ngx_http_redis_ratelimit_node_idle(node);
}
