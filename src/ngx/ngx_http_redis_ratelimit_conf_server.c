
/*
 * "redis_ratelimit_server": its grammar is the core's (rrl_conf.h); here
 * its addresses are resolved, now: hiredis would block a worker on DNS.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static char *ngx_http_redis_ratelimit_server_addr(ngx_conf_t *cf,
    ngx_command_t *cmd, ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_str_t *value);
static char *ngx_http_redis_ratelimit_server_tls(ngx_conf_t *cf,
    ngx_command_t *cmd, ngx_http_redis_ratelimit_main_conf_t *rmcf,
    rrl_server_conf_t *sc);


char *
ngx_http_redis_ratelimit_server(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    ngx_int_t           rc;
    ngx_str_t          *value;
    ngx_uint_t          i;
    rrl_conf_t          c;
    rrl_server_conf_t  *sc;

    if (rmcf->server.len) {
        return "is duplicate";
    }

    value = cf->args->elts;

    rmcf->server = value[1];

    ngx_http_redis_ratelimit_conf_init(&c, RRL_CONF_SERVER, cmd);

    for (i = 1; i < cf->args->nelts; i++) {
        rc = ngx_http_redis_ratelimit_conf_word(cf, &c, &value[i]);

        if (rc == NGX_ERROR
            || (rc == NGX_DECLINED
                && ngx_http_redis_ratelimit_server_addr(cf, cmd, rmcf,
                                                        &value[i])
                   != NGX_CONF_OK))
        {
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_http_redis_ratelimit_conf_word(cf, &c, NULL) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    sc = &c.u.server;

    rrl_server_engine_conf(sc, &rmcf->engine);
    rmcf->timeout = (ngx_msec_t) sc->timeout_ms;

    return sc->tls ? ngx_http_redis_ratelimit_server_tls(cf, cmd, rmcf, sc)
                   : NGX_CONF_OK;
}


/* the SSL context: once a configuration, its files read now */

static char *
ngx_http_redis_ratelimit_server_tls(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, rrl_server_conf_t *sc)
{
    rrl_tls_t           *tls;
    ngx_pool_cleanup_t  *cln;
    char                 why[NGX_MAX_CONF_ERRSTR];

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    tls = rrl_server_tls(sc, (char *) cf->cycle->conf_prefix.data,
                         cf->cycle->conf_prefix.len, why, sizeof(why));
    if (tls == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s in \"%V\" directive",
                           why, &cmd->name);
        return NGX_CONF_ERROR;
    }

    cln->handler = rrl_tls_free;
    cln->data = tls;

    rmcf->engine.tls = tls;
    rmcf->engine.sentinel_tls = sc->sentinel_tls ? tls : NULL;

    return NGX_CONF_OK;
}


static char *
ngx_http_redis_ratelimit_server_addr(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_str_t *value)
{
    u_char                           *p;
    ngx_url_t                         u;
    ngx_uint_t                        i;
    struct sockaddr_un               *saun;
    rrl_engine_addr_t                *addr;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = *value;
    u.default_port = 6379;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        if (u.err) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s in \"%V\" of the \"%V\" directive",
                               u.err, &u.url, &cmd->name);
        }

        return NGX_CONF_ERROR;
    }

    if (u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "no address for \"%V\" in \"%V\" directive",
                           &u.url, &cmd->name);
        return NGX_CONF_ERROR;
    }

    /* a name of several addresses: each is a seed (the first, alone) */

    for (i = 0; i < u.naddrs; i++) {
        addr = ngx_array_push(&rmcf->addrs);
        if (addr == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memzero(addr, sizeof(rrl_engine_addr_t));
        addr->name = (char *) value->data;

        if (u.family == AF_UNIX) {
            /* NUL-terminated by ngx_parse_url(), in cf->pool */
            saun = (struct sockaddr_un *) u.addrs[i].sockaddr;
            addr->unix_path = saun->sun_path;

            continue;
        }

        /* NUL-terminated: zeroed, one byte more */
        p = ngx_pcalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        (void) ngx_sock_ntop(u.addrs[i].sockaddr, u.addrs[i].socklen, p,
                             NGX_SOCKADDR_STRLEN, 0);

        addr->host = (char *) p;
        addr->port = ngx_inet_get_port(u.addrs[i].sockaddr);
    }

    return NGX_CONF_OK;
}

