
/*
 * The variables: $redis_ratelimit_status, _remaining, _reset, _zone and
 * _rtt, read from the main request's context.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static ngx_int_t ngx_http_redis_ratelimit_status_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_decision_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_zone_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_redis_ratelimit_rtt_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);


static ngx_http_variable_t  ngx_http_redis_ratelimit_vars[] = {

    { ngx_string("redis_ratelimit_status"), NULL,
      ngx_http_redis_ratelimit_status_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_remaining"), NULL,
      ngx_http_redis_ratelimit_decision_variable,
      offsetof(rrl_decision_t, remaining),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_zone"), NULL,
      ngx_http_redis_ratelimit_zone_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_reset"), NULL,
      ngx_http_redis_ratelimit_decision_variable,
      offsetof(rrl_decision_t, reset_after),
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("redis_ratelimit_rtt"), NULL,
      ngx_http_redis_ratelimit_rtt_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_redis_ratelimit_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    size_t                           len;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || ctx->status == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = (u_char *) rrl_status_text(ctx->status, &len);
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/* an integer of the decision: data is its offset in rrl_decision_t */

static ngx_int_t
ngx_http_redis_ratelimit_decision_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                          *p;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%L",
                         *(int64_t *) ((u_char *) &ctx->decision + data))
             - p;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_zone_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_redis_ratelimit_zone_t  *zone;
    ngx_http_redis_ratelimit_ctx_t   *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided) {
        v->not_found = 1;
        return NGX_OK;
    }

    zone = ctx->limits[ctx->decision.reported]->zone;

    v->len = zone->name.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = zone->name.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_rtt_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                          *p;
    int64_t                          us;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->replied) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + sizeof(".000") - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    us = ngx_max(ctx->rtt, 0);

    /* ms with 3 decimals, as $upstream_response_time has them for s */
    v->len = ngx_sprintf(p, "%L.%03L", us / 1000, us % 1000) - p;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = p;

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
