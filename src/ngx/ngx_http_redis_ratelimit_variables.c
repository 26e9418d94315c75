
/*
 * The variables ($redis_ratelimit_status, _remaining, _reset, _zone, _rtt,
 * _delay, _cost), read from the main request's context; the core's values.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


/* a variable's value, bytes: a number, a status or a zone name */
#define NGX_HTTP_REDIS_RATELIMIT_VALUE_ROOM  64


/* data: the variable's RRL_VAR_* */

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
    int                   i;
    ngx_str_t             name;
    ngx_http_variable_t  *var;

    /* the core names them, by their RRL_VAR_* */
    for (i = 0; rrl_shown_variable_name(i); i++) {
        name.data = (u_char *) rrl_shown_variable_name(i);
        name.len = ngx_strlen(name.data);

        var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = ngx_http_redis_ratelimit_variable;
        var->data = (uintptr_t) i;
    }

    return NGX_OK;
}
