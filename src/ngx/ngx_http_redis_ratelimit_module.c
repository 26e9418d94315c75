
/*
 * ngx_http_redis_ratelimit_module: limits requests against a Redis shared
 * by a fleet of nginx servers. Directives and the module's lifecycle live
 * here; the handler, the variables, the Redis link, the header filter and
 * the algorithms (in the C++ core and Lua scripts) live beside it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"


static void ngx_http_redis_ratelimit_core_log(void *data, int level,
    const char *msg);

static void *ngx_http_redis_ratelimit_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_redis_ratelimit_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static ngx_int_t ngx_http_redis_ratelimit_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_redis_ratelimit_init_process(ngx_cycle_t *cycle);
static void ngx_http_redis_ratelimit_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_redis_ratelimit_commands[] = {

    { ngx_string("redis_ratelimit_server"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_server,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_deny_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_set_value,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, deny_size),
      NULL },

    { ngx_string("redis_ratelimit_lease_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_set_value,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, lease_size),
      NULL },

    { ngx_string("redis_ratelimit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_limit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_set_value,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, status_code),
      NULL },

    { ngx_string("redis_ratelimit_dry_run"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, dry_run),
      NULL },

    { ngx_string("redis_ratelimit_headers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_set_value,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, headers),
      NULL },

    { ngx_string("redis_ratelimit_problem_json"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, problem_json),
      NULL },

    { ngx_string("redis_ratelimit_fail"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_redis_ratelimit_fail_mode,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, fail),
      NULL },

    { ngx_string("redis_ratelimit_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_log_level,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, log_level),
      NULL },

    { ngx_string("redis_ratelimit_metrics"),
      NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_redis_ratelimit_metrics,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_redis_ratelimit_module_ctx = {
    ngx_http_redis_ratelimit_add_variables, /* preconfiguration */
    ngx_http_redis_ratelimit_init,         /* postconfiguration */

    ngx_http_redis_ratelimit_create_main_conf, /* create main configuration */
    ngx_http_redis_ratelimit_init_main_conf, /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_redis_ratelimit_create_loc_conf, /* create location configuration */
    ngx_http_redis_ratelimit_merge_loc_conf /* merge location configuration */
};


ngx_module_t  ngx_http_redis_ratelimit_module = {
    NGX_MODULE_V1,
    &ngx_http_redis_ratelimit_module_ctx,  /* module context */
    ngx_http_redis_ratelimit_commands,     /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_redis_ratelimit_init_process, /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_redis_ratelimit_exit_process, /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void
ngx_http_redis_ratelimit_core_log(void *data, int level, const char *msg)
{
    ngx_uint_t  ngx_level;

    if (level == RRL_LOG_ERR || level == RRL_LOG_FAILURE) {
        /* replies, failures: a broken Redis must not flood the log */
        ngx_http_redis_ratelimit_log_failure(ngx_cycle->log,
                                             "redis_ratelimit: %s", msg);
        return;
    }

    ngx_level = (level == RRL_LOG_WARN) ? NGX_LOG_WARN : NGX_LOG_INFO;

    ngx_log_error(ngx_level, ngx_cycle->log, 0, "redis_ratelimit: %s", msg);
}


static void *
ngx_http_redis_ratelimit_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_redis_ratelimit_main_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_redis_ratelimit_main_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /* the rest is set by the directives, or stays 0 */

    conf->deny_size = NGX_CONF_UNSET_UINT;
    conf->lease_size = NGX_CONF_UNSET_UINT;

    if (ngx_array_init(&conf->zones, cf->pool, 4,
                       sizeof(ngx_http_redis_ratelimit_zone_t))
        != NGX_OK
        || ngx_array_init(&conf->addrs, cf->pool, 1,
                          sizeof(rrl_engine_addr_t))
           != NGX_OK)
    {
        return NULL;
    }

    return conf;
}


static char *
ngx_http_redis_ratelimit_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    ngx_str_t                         name;
    const char                       *sha1;
    ngx_http_redis_ratelimit_zone_t  *zone;

    if (rmcf->zones.nelts && rmcf->server.len == 0) {
        zone = rmcf->zones.elts;

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"redis_ratelimit_zone\" is used in %s:%ui, "
                      "but no \"redis_ratelimit_server\" is defined",
                      zone->file, zone->line);
        return NGX_CONF_ERROR;
    }

    sha1 = rrl_script_sha1();
    if (sha1 == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_redis_ratelimit_deny_init_conf(cf, rmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_init_uint_value(rmcf->lease_size, RRL_CONF_LEASE_SIZE);
    if (rmcf->leases) {
        /* a reload of the same size keeps the entries: see lease_same_zone */
        ngx_str_set(&name, RRL_CONF_LEASE_ZONE);

        rmcf->lease_zone = ngx_http_redis_ratelimit_shm_add(cf, &name,
                               rmcf->lease_size,
                               &ngx_http_redis_ratelimit_module,
                               sizeof(ngx_http_redis_ratelimit_shm_t),
                               sizeof(rrl_lease_entry_t),
                               offsetof(rrl_lease_entry_t, end_us),
                               "lease table");
        if (rmcf->lease_zone == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    rmcf->script_sha1.data = (u_char *) sha1;
    rmcf->script_sha1.len = ngx_strlen(sha1);

    return NGX_CONF_OK;
}


static void *
ngx_http_redis_ratelimit_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_redis_ratelimit_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_redis_ratelimit_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /* set by ngx_pcalloc(): limits.elts, local_zone: NULL */

    conf->local_share = 1;
    conf->status_code = NGX_CONF_UNSET_UINT;
    conf->dry_run = NGX_CONF_UNSET;
    conf->headers = NGX_CONF_UNSET_UINT;
    conf->problem_json = NGX_CONF_UNSET;
    conf->fail = NGX_CONF_UNSET_UINT;
    conf->log_level = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_redis_ratelimit_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_redis_ratelimit_loc_conf_t *prev = parent;
    ngx_http_redis_ratelimit_loc_conf_t *conf = child;

    ngx_uint_t                         i;
    ngx_http_redis_ratelimit_limit_t  *limit;

    if (conf->limits.elts == NULL) {
        conf->limits = prev->limits;
    }

    if (ngx_http_redis_ratelimit_resolve_limits(cf, &conf->limits) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* in a cluster, their calls reserve and release: see the deny cache */
    if (conf->limits.nelts > 1) {
        limit = conf->limits.elts;

        for (i = 0; i < conf->limits.nelts; i++) {
            limit[i].zone->combined = 1;
        }
    }

    ngx_conf_merge_uint_value(conf->status_code, prev->status_code,
                              NGX_HTTP_TOO_MANY_REQUESTS);

    ngx_conf_merge_value(conf->dry_run, prev->dry_run, 0);

    ngx_conf_merge_uint_value(conf->headers, prev->headers,
                              RRL_SHOW_LEGACY);
    ngx_conf_merge_value(conf->problem_json, prev->problem_json, 0);

    /* the mode and its parameters are one directive: inherited together */
    if (conf->fail == NGX_CONF_UNSET_UINT) {
        conf->fail = RRL_FAIL_OPEN;

        if (prev->fail != NGX_CONF_UNSET_UINT) {
            conf->fail = prev->fail;
            conf->local_zone = prev->local_zone;
            conf->local_share = prev->local_share;
        }
    }

    ngx_conf_merge_uint_value(conf->log_level, prev->log_level, NGX_LOG_ERR);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_redis_ratelimit_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt                   *h;
    ngx_http_core_main_conf_t             *cmcf;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rrl_set_logger(ngx_http_redis_ratelimit_core_log, NULL);

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_redis_ratelimit_module);
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /* where limit_req runs: before access checks, so "satisfy" is moot */
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_redis_ratelimit_handler;

    /* settle=: after the request, when some limit has it */
    if (rmcf->settle) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_redis_ratelimit_settle_handler;
    }

    return ngx_http_redis_ratelimit_headers_init(cf);
}


static ngx_int_t
ngx_http_redis_ratelimit_init_process(ngx_cycle_t *cycle)
{
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    rmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_redis_ratelimit_module);

    if (rmcf == NULL || rmcf->server.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_redis_ratelimit_link_init(cycle, rmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_redis_ratelimit_metrics_init_process(cycle);
}


static void
ngx_http_redis_ratelimit_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_redis_ratelimit_metrics_exit_process();
    ngx_http_redis_ratelimit_link_exit();
}
