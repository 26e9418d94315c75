
/*
 * The rate limit headers: a header filter, so that they reach every
 * response of a limited request, error pages and internal redirects too.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static ngx_int_t ngx_http_redis_ratelimit_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_redis_ratelimit_add_header(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *value);
static ngx_int_t ngx_http_redis_ratelimit_add_number(ngx_http_request_t *r,
    ngx_str_t *name, int64_t n);
static ngx_int_t ngx_http_redis_ratelimit_add_draft(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;

static ngx_str_t  ngx_http_redis_ratelimit_limit_header =
    ngx_string("X-RateLimit-Limit");
static ngx_str_t  ngx_http_redis_ratelimit_remaining_header =
    ngx_string("X-RateLimit-Remaining");
static ngx_str_t  ngx_http_redis_ratelimit_reset_header =
    ngx_string("X-RateLimit-Reset");
static ngx_str_t  ngx_http_redis_ratelimit_retry_after_header =
    ngx_string("Retry-After");
static ngx_str_t  ngx_http_redis_ratelimit_policy_header =
    ngx_string("RateLimit-Policy");
static ngx_str_t  ngx_http_redis_ratelimit_ratelimit_header =
    ngx_string("RateLimit");


static ngx_int_t
ngx_http_redis_ratelimit_header_filter(ngx_http_request_t *r)
{
    ngx_int_t                         rc;
    ngx_http_redis_ratelimit_ctx_t   *ctx;
    ngx_http_redis_ratelimit_zone_t  *zone;

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_redis_ratelimit_get_ctx(r);

    if (ctx == NULL || !ctx->decided || ctx->headers_done) {
        return ngx_http_next_header_filter(r);
    }

    ctx->headers_done = 1;

    /* which headers: the core's, when the request was decided */

    if (ctx->show & RRL_SHOW_LEGACY) {
        zone = ctx->limits[ctx->decision.reported]->zone;

        if (ctx->show & RRL_SHOW_LOCAL_LIMITS) {
            /* what this server allows alone */
            rc = ngx_http_redis_ratelimit_add_number(r,
                                  &ngx_http_redis_ratelimit_limit_header,
                                  ngx_http_redis_ratelimit_local_capacity(zone,
                                                     ctx->conf->local_share));

        } else {
            rc = ngx_http_redis_ratelimit_add_header(r,
                                  &ngx_http_redis_ratelimit_limit_header,
                                  &zone->capacity_value);
        }

        if (rc != NGX_OK
            || ngx_http_redis_ratelimit_add_number(r,
                                  &ngx_http_redis_ratelimit_remaining_header,
                                  ctx->decision.remaining)
               != NGX_OK
            || ngx_http_redis_ratelimit_add_number(r,
                                  &ngx_http_redis_ratelimit_reset_header,
                                  ctx->decision.reset_unix)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if ((ctx->show & RRL_SHOW_DRAFT)
        && ngx_http_redis_ratelimit_add_draft(r, ctx) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if ((ctx->show & RRL_SHOW_RETRY_AFTER)
        && ngx_http_redis_ratelimit_add_number(r,
                                &ngx_http_redis_ratelimit_retry_after_header,
                                ctx->decision.retry_after)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_redis_ratelimit_add_header(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key = *name;
    h->value = *value;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_add_number(ngx_http_request_t *r, ngx_str_t *name,
    int64_t n)
{
    u_char     *p;
    ngx_str_t   value;

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    value.data = p;
    value.len = ngx_sprintf(p, "%L", n) - p;

    return ngx_http_redis_ratelimit_add_header(r, name, &value);
}


/* RateLimit-Policy and RateLimit, formatted by the core */

static ngx_int_t
ngx_http_redis_ratelimit_add_draft(ngx_http_request_t *r,
    ngx_http_redis_ratelimit_ctx_t *ctx)
{
    ngx_str_t                         value;
    rrl_policy_t                     *policies;
    ngx_http_redis_ratelimit_zone_t  *zone;

    policies = ngx_http_redis_ratelimit_policies(r, ctx);
    if (policies == NULL) {
        return NGX_ERROR;
    }

    value.len = rrl_ratelimit_policy(NULL, 0, policies, ctx->nlimits);
    value.data = ngx_pnalloc(r->pool, value.len);

    if (value.len == 0 || value.data == NULL) {
        return NGX_ERROR;
    }

    (void) rrl_ratelimit_policy((char *) value.data, value.len, policies,
                                ctx->nlimits);

    if (ngx_http_redis_ratelimit_add_header(r,
                                   &ngx_http_redis_ratelimit_policy_header,
                                   &value)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    zone = ctx->limits[ctx->decision.reported]->zone;

    value.len = rrl_ratelimit(NULL, 0, (char *) zone->name.data,
                              zone->name.len, &ctx->decision);
    value.data = ngx_pnalloc(r->pool, value.len);

    if (value.len == 0 || value.data == NULL) {
        return NGX_ERROR;
    }

    (void) rrl_ratelimit((char *) value.data, value.len,
                         (char *) zone->name.data, zone->name.len,
                         &ctx->decision);

    return ngx_http_redis_ratelimit_add_header(r,
                                   &ngx_http_redis_ratelimit_ratelimit_header,
                                   &value);
}


ngx_int_t
ngx_http_redis_ratelimit_headers_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_redis_ratelimit_header_filter;

    return NGX_OK;
}
