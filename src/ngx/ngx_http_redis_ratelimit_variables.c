
/*
 * The variables ($redis_ratelimit_status, _remaining, _reset, _zone, _rtt,
 * _delay, _cost), read from the main request's context; their values are the core's.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


/* a variable's value, bytes: a number, a status or a zone name */
#define NGX_HTTP_REDIS_RATELIMIT_VALUE_ROOM  64


static ngx_int_t ngx_http_redis_ratelimit_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


/* data: the variable's RRL_VAR_* */
static ngx_http_variable_t  ngx_http_redis_ratelimit_vars[] = {

    { ngx_string("redis_ratelimit_status"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_STATUS,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_remaining"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_REMAINING,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_zone"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_ZONE,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_reset"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_RESET,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_rtt"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_RTT,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_delay"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_DELAY,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_cost"), NULL,
      ngx_http_redis_ratelimit_variable, RRL_VAR_COST,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_redis_ratelimit_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    size_t                           len;
    rrl_shown_t                      shown;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_redis_ratelimit_shown(ctx, &shown);

    /* once in the common case: again only for a value longer than room */

    v->data = ngx_pnalloc(r->pool, NGX_HTTP_REDIS_RATELIMIT_VALUE_ROOM);
    if (v->data == NULL) {
        return NGX_ERROR;
    }

    len = rrl_shown_variable((char *) v->data,
                             NGX_HTTP_REDIS_RATELIMIT_VALUE_ROOM, (int) data,
                             &shown);
    if (len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (len > NGX_HTTP_REDIS_RATELIMIT_VALUE_ROOM) {
        v->data = ngx_pnalloc(r->pool, len);
        if (v->data == NULL) {
            return NGX_ERROR;
        }

        (void) rrl_shown_variable((char *) v->data, len, (int) data, &shown);
    }

    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


ngx_int_t
ngx_http_redis_ratelimit_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_redis_ratelimit_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}
