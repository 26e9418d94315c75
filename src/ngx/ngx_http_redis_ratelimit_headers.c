
/*
 * The rate limit headers: a header filter, so that they reach every
 * response of a limited request, error pages and internal redirects too.
 * Which fields and their values are the core's (rrl_shown_fields()).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static ngx_int_t ngx_http_redis_ratelimit_header_filter(ngx_http_request_t *r);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


static ngx_int_t
ngx_http_redis_ratelimit_header_filter(ngx_http_request_t *r)
{
    u_char                          *p;
    size_t                           len, size, n, i;
    rrl_shown_t                      shown;
    rrl_field_t                      fields[RRL_SHOWN_FIELDS];
    ngx_table_elt_t                 *h;
    ngx_http_redis_ratelimit_ctx_t  *ctx;

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided || ctx->headers_done) {
        return ngx_http_next_header_filter(r);
    }

    ctx->headers_done = 1;

    ngx_http_redis_ratelimit_shown(ctx, &shown);

    /* most fit a first guess: written once */

    for (size = 256; /* void */; size = len) {
        p = ngx_pnalloc(r->pool, size);
        if (p == NULL) {
            return NGX_ERROR;
        }

        len = rrl_shown_fields((char *) p, size, &shown, fields, &n);
        if (len <= size) {
            break;
        }
    }

    if (len == 0) {
        return ngx_http_next_header_filter(r);
    }

    for (i = 0; i < n; i++) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        h->key.len = fields[i].name_len;
        h->key.data = (u_char *) fields[i].name;
        h->value.len = fields[i].value_len;
        h->value.data = (u_char *) fields[i].value;
#if (nginx_version >= 1023000)
        h->next = NULL;
#endif
    }

    return ngx_http_next_header_filter(r);
}


ngx_int_t
ngx_http_redis_ratelimit_headers_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_redis_ratelimit_header_filter;

    return NGX_OK;
}
