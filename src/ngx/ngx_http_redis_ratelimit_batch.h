
/*
 * The batches of the link's script calls: the parts made in one turn of
 * the event loop for one node and slot go as one EVALSHA of the script's
 * batch form (rrl_batch_*). Below the link, it reports to the link through
 * the handlers given to batch_init().
 */


#ifndef _NGX_HTTP_REDIS_RATELIMIT_BATCH_H_INCLUDED_
#define _NGX_HTTP_REDIS_RATELIMIT_BATCH_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_redis_ratelimit_node.h"
#include "rrl_call.h"


typedef struct {
    /* the part is answered: its reply is written, or error (len) tells */
    void  (*answered)(rrl_call_t *parts, ngx_uint_t part, u_char *error,
              size_t len);
    /* a part nobody waits for left its batch: its call may be freed */
    void  (*out)(rrl_call_t *parts);
    /* MOVED or ASK (kind) of the batch's slot: the node to send it to */
    ngx_http_redis_ratelimit_node_t  *(*redirect)(
              ngx_http_redis_ratelimit_node_t *from, ngx_uint_t kind,
              ngx_uint_t slot, u_char *host, in_port_t port);
    /* an error reply asks RRL_RETRY_ASK_* who serves now */
    void  (*ask)(ngx_uint_t who);
} ngx_http_redis_ratelimit_batch_handlers_t;


/* nodes: the link's; sha: the script's, to call it by */
ngx_int_t ngx_http_redis_ratelimit_batch_init(ngx_log_t *log,
    ngx_queue_t *nodes, ngx_str_t *sha,
    ngx_http_redis_ratelimit_batch_handlers_t *handlers);
void ngx_http_redis_ratelimit_batch_exit(void);
/* the part joins the open batch of its node and slot; an error: not sent */
ngx_int_t ngx_http_redis_ratelimit_batch_add(rrl_call_t *parts,
    ngx_uint_t part);


#endif /* _NGX_HTTP_REDIS_RATELIMIT_BATCH_H_INCLUDED_ */
