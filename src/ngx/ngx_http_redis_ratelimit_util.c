
/*
 * The shim's bottom layer, used by every other file and calling none:
 * rate-limited error logging, the monotonic clock and the module's own
 * responses.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


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


/*
 * A fresh reading of the monotonic clock, in us: ngx_current_msec is the
 * time of the event loop's last turn (of a coarse clock, on Linux), and a
 * late "now" could reject after Redis's end of a rejection.
 */

int64_t
ngx_http_redis_ratelimit_clock(void)
{
#if (NGX_HAVE_CLOCK_MONOTONIC)
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
#else
    struct timeval  tv;

    ngx_gettimeofday(&tv);

    return (int64_t) tv.tv_sec * 1000000 + tv.tv_usec;
#endif
}


/* a response of the module's own: b holds the whole body */

ngx_int_t
ngx_http_redis_ratelimit_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_buf_t *b)
{
    ngx_int_t     rc;
    ngx_chain_t   out;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = b->last - b->pos;
    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type->len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
