
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


#define NGX_HTTP_REDIS_RATELIMIT_DEFAULT_TIMEOUT       100
#define NGX_HTTP_REDIS_RATELIMIT_DEFAULT_MAX_FAILURES  5
#define NGX_HTTP_REDIS_RATELIMIT_DEFAULT_COOLDOWN      500
#define NGX_HTTP_REDIS_RATELIMIT_DEFAULT_MAX_PARKED    1000


static void ngx_http_redis_ratelimit_core_log(void *data, int level,
    const char *msg);

static void *ngx_http_redis_ratelimit_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_redis_ratelimit_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_redis_ratelimit_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static ngx_int_t ngx_http_redis_ratelimit_resolve_limits(ngx_conf_t *cf,
    ngx_array_t *limits);
static ngx_http_redis_ratelimit_zone_t *ngx_http_redis_ratelimit_find_zone(
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_str_t *name);
static char *ngx_http_redis_ratelimit_server(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_redis_ratelimit_server_addr(ngx_conf_t *cf,
    ngx_command_t *cmd, ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_str_t *value);
static char *ngx_http_redis_ratelimit_zone(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_redis_ratelimit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_redis_ratelimit_status(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_redis_ratelimit_fail_mode(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_redis_ratelimit_enum(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_redis_ratelimit_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_redis_ratelimit_init_process(ngx_cycle_t *cycle);
static void ngx_http_redis_ratelimit_exit_process(ngx_cycle_t *cycle);


static ngx_conf_enum_t  ngx_http_redis_ratelimit_headers_values[] = {
    { ngx_string("off"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_OFF },
    { ngx_string("legacy"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_LEGACY },
    { ngx_string("draft"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_DRAFT },
    { ngx_string("both"), NGX_HTTP_REDIS_RATELIMIT_HEADERS_BOTH },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_redis_ratelimit_fail_values[] = {
    { ngx_string("open"), NGX_HTTP_REDIS_RATELIMIT_FAIL_OPEN },
    { ngx_string("closed"), NGX_HTTP_REDIS_RATELIMIT_FAIL_CLOSED },
    { ngx_string("local"), NGX_HTTP_REDIS_RATELIMIT_FAIL_LOCAL },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_redis_ratelimit_log_levels[] = {
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_null_string, 0 }
};


/* the time and number parameters of "redis_ratelimit_server" */
typedef struct {
    ngx_str_t                    name;        /* with its "=" */
    ngx_uint_t                   time;        /* a time, or a number >= 1 */
    size_t                       offset;      /* in the main conf */
    char                        *what;        /* for errors */
} ngx_http_redis_ratelimit_server_param_t;


static ngx_http_redis_ratelimit_server_param_t
    ngx_http_redis_ratelimit_server_params[] =
{
    { ngx_string("timeout="), 1,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, timeout), "timeout" },

    { ngx_string("connect_timeout="), 1,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, connect_timeout),
      "timeout" },

    { ngx_string("cooldown="), 1,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, cooldown), "cooldown" },

    { ngx_string("max_failures="), 0,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, max_failures),
      "number" },

    { ngx_string("max_parked="), 0,
      offsetof(ngx_http_redis_ratelimit_main_conf_t, max_parked), "number" },

    { ngx_null_string, 0, 0, NULL }
};


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
      ngx_http_redis_ratelimit_deny_cache,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_redis_ratelimit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("redis_ratelimit_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_status,
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
      ngx_http_redis_ratelimit_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, headers),
      &ngx_http_redis_ratelimit_headers_values },

    { ngx_string("redis_ratelimit_problem_json"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, problem_json),
      NULL },

    { ngx_string("redis_ratelimit_fail"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE123,
      ngx_http_redis_ratelimit_fail_mode,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, fail),
      &ngx_http_redis_ratelimit_fail_values },

    { ngx_string("redis_ratelimit_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_redis_ratelimit_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_redis_ratelimit_loc_conf_t, log_level),
      &ngx_http_redis_ratelimit_log_levels },

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

    if (level == RRL_LOG_ERR) {
        /* about replies: a broken Redis must not flood the log */
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

    /*
     * set by ngx_pcalloc():
     *
     *     conf->server = { 0, NULL };
     *     conf->host = { 0, NULL };
     *     conf->unix_path = { 0, NULL };
     *     conf->password = { 0, NULL };
     *     conf->db = 0;
     *     conf->deny_zone = NULL;
     */

    conf->deny_size = NGX_CONF_UNSET_SIZE;

    if (ngx_array_init(&conf->zones, cf->pool, 4,
                       sizeof(ngx_http_redis_ratelimit_zone_t))
        != NGX_OK
        || ngx_array_init(&conf->addrs, cf->pool, 1,
                          sizeof(ngx_http_redis_ratelimit_addr_t))
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

    ngx_http_redis_ratelimit_local_init_conf(cf);

    if (ngx_http_redis_ratelimit_deny_init_conf(cf, rmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
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

    /*
     * set by ngx_pcalloc():
     *
     *     conf->limits.elts = NULL;
     *     conf->local_zone = NULL;
     *     conf->local_share = 0;
     */

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
                              NGX_HTTP_REDIS_RATELIMIT_HEADERS_LEGACY);
    ngx_conf_merge_value(conf->problem_json, prev->problem_json, 0);

    /* the mode and its parameters are one directive: inherited together */
    if (conf->fail == NGX_CONF_UNSET_UINT) {
        conf->fail = NGX_HTTP_REDIS_RATELIMIT_FAIL_OPEN;

        if (prev->fail != NGX_CONF_UNSET_UINT) {
            conf->fail = prev->fail;
            conf->local_zone = prev->local_zone;
            conf->local_share = prev->local_share;
        }
    }

    if (conf->local_share == 0) {
        conf->local_share = 1;
    }

    ngx_conf_merge_uint_value(conf->log_level, prev->log_level, NGX_LOG_ERR);

    return NGX_CONF_OK;
}


/* zones may be defined after the "redis_ratelimit" lines that use them */

static ngx_int_t
ngx_http_redis_ratelimit_resolve_limits(ngx_conf_t *cf, ngx_array_t *limits)
{
    ngx_uint_t                             i;
    ngx_http_redis_ratelimit_limit_t      *limit;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_redis_ratelimit_module);

    limit = limits->elts;

    for (i = 0; i < limits->nelts; i++) {

        if (limit[i].zone) {
            continue;
        }

        limit[i].zone = ngx_http_redis_ratelimit_find_zone(rmcf,
                                                          &limit[i].zone_name);

        if (limit[i].zone == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown zone \"%V\" in \"redis_ratelimit\" "
                          "directive in %s:%ui", &limit[i].zone_name,
                          limit[i].file, limit[i].line);
            return NGX_ERROR;
        }

        if (limit[i].cost_value == NULL
            && limit[i].cost > limit[i].zone->capacity)
        {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "cost=%ui is more than zone \"%V\" can ever allow "
                          "(%ui) in \"redis_ratelimit\" directive in %s:%ui",
                          limit[i].cost, &limit[i].zone_name,
                          limit[i].zone->capacity, limit[i].file,
                          limit[i].line);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_http_redis_ratelimit_zone_t *
ngx_http_redis_ratelimit_find_zone(ngx_http_redis_ratelimit_main_conf_t *rmcf,
    ngx_str_t *name)
{
    ngx_uint_t                        i;
    ngx_http_redis_ratelimit_zone_t  *zones;

    zones = rmcf->zones.elts;

    for (i = 0; i < rmcf->zones.nelts; i++) {
        if (zones[i].name.len == name->len
            && ngx_strncmp(zones[i].name.data, name->data, name->len) == 0)
        {
            return &zones[i];
        }
    }

    return NULL;
}


static char *
ngx_http_redis_ratelimit_server(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    ngx_int_t            db, n;
    ngx_str_t           *value, s;
    ngx_uint_t           i, ok, naddrs;
    ngx_msec_t           ms;

    ngx_http_redis_ratelimit_server_param_t  *param;

    if (rmcf->server.len) {
        return "is duplicate";
    }

    value = cf->args->elts;

    rmcf->server = value[1];
    rmcf->timeout = NGX_HTTP_REDIS_RATELIMIT_DEFAULT_TIMEOUT;
    rmcf->connect_timeout = NGX_HTTP_REDIS_RATELIMIT_DEFAULT_TIMEOUT;
    rmcf->max_failures = NGX_HTTP_REDIS_RATELIMIT_DEFAULT_MAX_FAILURES;
    rmcf->cooldown = NGX_HTTP_REDIS_RATELIMIT_DEFAULT_COOLDOWN;
    rmcf->max_parked = NGX_HTTP_REDIS_RATELIMIT_DEFAULT_MAX_PARKED;
    rmcf->db = NGX_CONF_UNSET;

    /* the addresses, then the parameters */

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_strlchr(value[i].data, value[i].data + value[i].len, '=')
            || (value[i].len == 7
                && ngx_strncmp(value[i].data, "cluster", 7) == 0))
        {
            break;
        }

        if (ngx_http_redis_ratelimit_server_addr(cf, cmd, rmcf, &value[i])
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    naddrs = i - 1;

    if (naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "no address in \"%V\" directive", &cmd->name);
        return NGX_CONF_ERROR;
    }

    for ( /* void */ ; i < cf->args->nelts; i++) {

        for (param = ngx_http_redis_ratelimit_server_params;
             param->name.len;
             param++)
        {
            if (value[i].len >= param->name.len
                && ngx_strncmp(value[i].data, param->name.data,
                               param->name.len)
                   == 0)
            {
                break;
            }
        }

        if (param->name.len) {
            s.data = value[i].data + param->name.len;
            s.len = value[i].len - param->name.len;

            if (param->time) {
                ms = ngx_parse_time(&s, 0);
                ok = (ms != (ngx_msec_t) NGX_ERROR && ms != 0);
                *(ngx_msec_t *) ((char *) rmcf + param->offset) = ms;

            } else {
                n = ngx_atoi(s.data, s.len);
                ok = (n != NGX_ERROR && n != 0);
                *(ngx_uint_t *) ((char *) rmcf + param->offset) = n;
            }

            if (!ok) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid %s \"%V\" in \"%V\" directive",
                                   param->what, &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (value[i].len == 7
            && ngx_strncmp(value[i].data, "cluster", 7) == 0)
        {
            if (rmcf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_SINGLE) {
                goto modes;
            }

            rmcf->mode = NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER;
            continue;
        }

        if (ngx_strncmp(value[i].data, "sentinel=", 9) == 0) {
            if (rmcf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_SINGLE) {
                goto modes;
            }

            rmcf->sentinel_name.data = value[i].data + 9;
            rmcf->sentinel_name.len = value[i].len - 9;

            if (rmcf->sentinel_name.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\" in \"%V\" "
                                   "directive, sentinel= needs the name of "
                                   "the primary", &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            rmcf->mode = NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL;
            continue;
        }

        if (ngx_strncmp(value[i].data, "password=", 9) == 0) {
            rmcf->password.data = value[i].data + 9;
            rmcf->password.len = value[i].len - 9;
            continue;
        }

        if (ngx_strncmp(value[i].data, "username=", 9) == 0) {
            rmcf->username.data = value[i].data + 9;
            rmcf->username.len = value[i].len - 9;
            continue;
        }

        if (ngx_strncmp(value[i].data, "sentinel_password=", 18) == 0) {
            rmcf->sentinel_password.data = value[i].data + 18;
            rmcf->sentinel_password.len = value[i].len - 18;
            continue;
        }

        if (ngx_strncmp(value[i].data, "db=", 3) == 0) {
            db = ngx_atoi(value[i].data + 3, value[i].len - 3);
            if (db == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid db \"%V\" in \"%V\" directive",
                                   &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            rmcf->db = db;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" in \"%V\" directive",
                           &value[i], &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rmcf->mode == NGX_HTTP_REDIS_RATELIMIT_MODE_SINGLE && naddrs > 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "several addresses in \"%V\" directive need "
                           "\"cluster\" or \"sentinel=NAME\"", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rmcf->mode == NGX_HTTP_REDIS_RATELIMIT_MODE_CLUSTER
        && rmcf->db != NGX_CONF_UNSET)
    {
        /* a cluster has only database 0 */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"db=\" cannot be used with \"cluster\" in "
                           "\"%V\" directive", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rmcf->sentinel_password.len
        && rmcf->mode != NGX_HTTP_REDIS_RATELIMIT_MODE_SENTINEL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"sentinel_password=\" needs \"sentinel=NAME\" "
                           "in \"%V\" directive", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rmcf->username.len && rmcf->password.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"username=\" needs \"password=\" in \"%V\" "
                           "directive", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rmcf->db == NGX_CONF_UNSET) {
        rmcf->db = 0;
    }

    return NGX_CONF_OK;

modes:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"%V\" directive, "
                       "\"cluster\" and \"sentinel=\" exclude each other",
                       &value[i], &cmd->name);
    return NGX_CONF_ERROR;
}


/* resolves names now: hiredis would block the worker on DNS */

static char *
ngx_http_redis_ratelimit_server_addr(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_str_t *value)
{
    u_char                           *p;
    size_t                            len;
    ngx_url_t                         u;
    ngx_uint_t                        i;
    struct sockaddr_un               *saun;
    ngx_http_redis_ratelimit_addr_t  *addr;

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

        ngx_memzero(addr, sizeof(ngx_http_redis_ratelimit_addr_t));
        addr->name = *value;

        if (u.family == AF_UNIX) {
            saun = (struct sockaddr_un *) u.addrs[i].sockaddr;

            len = ngx_strlen(saun->sun_path);

            p = ngx_pnalloc(cf->pool, len + 1);
            if (p == NULL) {
                return NGX_CONF_ERROR;
            }

            *ngx_cpymem(p, saun->sun_path, len) = '\0';
            addr->unix_path = p;

            continue;
        }

        p = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        len = ngx_sock_ntop(u.addrs[i].sockaddr, u.addrs[i].socklen, p,
                            NGX_SOCKADDR_STRLEN, 0);
        p[len] = '\0';

        addr->host = p;
        addr->port = ngx_inet_get_port(u.addrs[i].sockaddr);
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_redis_ratelimit_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    u_char                            *p;
    ngx_int_t                          burst;
    ngx_str_t                         *value, s;
    ngx_uint_t                         i;
    rrl_rate_t                         rate;
    ngx_http_redis_ratelimit_zone_t   *zone, *first;
    ngx_http_compile_complex_value_t   ccv;

    value = cf->args->elts;

    zone = ngx_array_push(&rmcf->zones);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(zone, sizeof(ngx_http_redis_ratelimit_zone_t));

    zone->algorithm = RRL_DEFAULT_ALGORITHM;
    zone->burst = RRL_BURST_UNSET;
    zone->file = cf->conf_file->file.name.data;
    zone->line = cf->conf_file->line;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &zone->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            zone->name.data = value[i].data + 5;
            zone->name.len = value[i].len - 5;

            if (!rrl_zone_name_valid((char *) zone->name.data,
                                     zone->name.len))
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone name \"%V\" in \"%V\" "
                                   "directive", &zone->name, &cmd->name);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "rate=", 5) == 0) {
            zone->rate.data = value[i].data + 5;
            zone->rate.len = value[i].len - 5;

            if (rrl_rate_parse((char *) zone->rate.data, zone->rate.len,
                               &rate)
                != RRL_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid rate \"%V\" in \"%V\" directive",
                                   &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            zone->limit = (ngx_uint_t) rate.count;
            zone->period = rate.period_ms;
            continue;
        }

        if (ngx_strncmp(value[i].data, "algorithm=", 10) == 0) {
            zone->algorithm = rrl_algorithm_parse((char *) value[i].data + 10,
                                                  value[i].len - 10);
            if (zone->algorithm == RRL_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid algorithm \"%V\" in \"%V\" "
                                   "directive", &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "burst=", 6) == 0) {
            burst = ngx_atoi(value[i].data + 6, value[i].len - 6);
            if (burst == NGX_ERROR
                || (uint64_t) burst > RRL_MAX_COST)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid burst value \"%V\" in \"%V\" "
                                   "directive", &value[i], &cmd->name);
                return NGX_CONF_ERROR;
            }

            zone->burst = burst;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" in \"%V\" directive",
                           &value[i], &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (zone->name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (zone->limit == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"rate\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    zone->burst = rrl_burst(zone->algorithm, zone->limit, zone->burst);
    zone->capacity = rrl_capacity(zone->algorithm, zone->limit, zone->burst);

    if (zone->capacity == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"burst=0\" leaves no room for any request "
                           "with \"algorithm=%s\" in \"%V\" directive",
                           rrl_algorithm_name(zone->algorithm), &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (rrl_state_lifetime_ms(zone->algorithm, zone->limit, zone->period,
                              zone->burst)
        > RRL_MAX_STATE_MS)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rate=%V\" with \"burst=%ui\" keeps state "
                           "for more than 100 years in \"%V\" directive",
                           &zone->rate, zone->burst, &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (zone->capacity > rrl_max_capacity(zone->algorithm)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rate=%V\" with \"burst=%ui\" allows %ui "
                           "requests a period, \"algorithm=%s\" at most "
                           "%uL in \"%V\" directive",
                           &zone->rate, zone->burst, zone->capacity,
                           rrl_algorithm_name(zone->algorithm),
                           rrl_max_capacity(zone->algorithm), &cmd->name);
        return NGX_CONF_ERROR;
    }

    /* the zone being defined is the last one: find an earlier namesake */
    rmcf->zones.nelts--;
    first = ngx_http_redis_ratelimit_find_zone(rmcf, &zone->name);
    rmcf->zones.nelts++;

    if (first) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is duplicate in \"%V\" "
                           "directive, first defined in %s:%ui",
                           &zone->name, &cmd->name, first->file, first->line);
        return NGX_CONF_ERROR;
    }

    /* the script's arguments and the header value, formatted once */

    p = ngx_pnalloc(cf->pool, 4 * NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }

    zone->algorithm_arg.data = (u_char *) rrl_algorithm_name(zone->algorithm);
    zone->algorithm_arg.len = ngx_strlen(zone->algorithm_arg.data);

    s.data = p;
    s.len = ngx_sprintf(p, "%ui", zone->limit) - p;
    zone->limit_arg = s;
    p += s.len;

    s.data = p;
    s.len = ngx_sprintf(p, "%uL", zone->period) - p;
    zone->period_arg = s;
    p += s.len;

    s.data = p;
    s.len = ngx_sprintf(p, "%ui", zone->burst) - p;
    zone->burst_arg = s;
    p += s.len;

    s.data = p;
    s.len = ngx_sprintf(p, "%ui", zone->capacity) - p;
    zone->capacity_value = s;

    return NGX_CONF_OK;
}


static char *
ngx_http_redis_ratelimit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_redis_ratelimit_loc_conf_t *rlcf = conf;

    ngx_int_t                          cost;
    ngx_str_t                         *value, s;
    ngx_uint_t                         i;
    ngx_http_redis_ratelimit_limit_t  *limit, *limits;
    ngx_http_compile_complex_value_t   ccv;

    value = cf->args->elts;

    if (rlcf->limits.elts == NULL) {
        if (ngx_array_init(&rlcf->limits, cf->pool, 1,
                           sizeof(ngx_http_redis_ratelimit_limit_t))
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    limit = ngx_array_push(&rlcf->limits);
    if (limit == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(limit, sizeof(ngx_http_redis_ratelimit_limit_t));

    limit->cost = 1;
    ngx_str_set(&limit->cost_arg, "1");
    limit->file = cf->conf_file->file.name.data;
    limit->line = cf->conf_file->line;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            limit->zone_name.data = value[i].data + 5;
            limit->zone_name.len = value[i].len - 5;
            continue;
        }

        if (ngx_strncmp(value[i].data, "cost=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            if (s.len && s.data[0] == '$') {
                limit->cost_value = ngx_palloc(cf->pool,
                                            sizeof(ngx_http_complex_value_t));
                if (limit->cost_value == NULL) {
                    return NGX_CONF_ERROR;
                }

                ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

                ccv.cf = cf;
                ccv.value = &s;
                ccv.complex_value = limit->cost_value;

                if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
                    return NGX_CONF_ERROR;
                }

                continue;
            }

            cost = ngx_atoi(s.data, s.len);
            if (cost == NGX_ERROR || cost == 0
                || (uint64_t) cost > RRL_MAX_COST)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid cost \"%V\" in \"%V\" directive, "
                                   "it must be a number from 1 to %uL "
                                   "or a variable", &value[i], &cmd->name,
                                   RRL_MAX_COST);
                return NGX_CONF_ERROR;
            }

            limit->cost = cost;
            limit->cost_arg = s;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" in \"%V\" directive",
                           &value[i], &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (limit->zone_name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    limits = rlcf->limits.elts;

    for (i = 0; i < rlcf->limits.nelts - 1; i++) {
        if (limits[i].zone_name.len == limit->zone_name.len
            && ngx_strncmp(limits[i].zone_name.data, limit->zone_name.data,
                           limit->zone_name.len)
               == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "zone \"%V\" is duplicate in \"%V\" "
                               "directive", &limit->zone_name, &cmd->name);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_redis_ratelimit_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    char  *p = conf;

    ngx_int_t    status;
    ngx_str_t   *value;
    ngx_uint_t  *field;

    field = (ngx_uint_t *) (p + cmd->offset);

    if (*field != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    status = ngx_atoi(value[1].data, value[1].len);

    if (status < 400 || status > 599) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive, "
                           "it must be a status code from 400 to 599",
                           &value[1], &cmd->name);
        return NGX_CONF_ERROR;
    }

    *field = status;

    return NGX_CONF_OK;
}


/* open | closed | local [local_zone=NAME:SIZE] [local_share=1/N] */

static char *
ngx_http_redis_ratelimit_fail_mode(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_loc_conf_t *rlcf = conf;

    char        *rv;
    ngx_int_t    share;
    ngx_str_t   *value, *zone, *share_value, **param, s;
    ngx_uint_t   i;

    rv = ngx_http_redis_ratelimit_enum(cf, cmd, conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    value = cf->args->elts;
    zone = NULL;
    share_value = NULL;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "local_zone=", 11) == 0) {
            param = &zone;

        } else if (ngx_strncmp(value[i].data, "local_share=", 12) == 0) {
            param = &share_value;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in \"%V\" directive",
                               &value[i], &cmd->name);
            return NGX_CONF_ERROR;
        }

        if (rlcf->fail != NGX_HTTP_REDIS_RATELIMIT_FAIL_LOCAL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" in \"%V\" "
                               "directive, it is only valid with \"local\"",
                               &value[i], &cmd->name);
            return NGX_CONF_ERROR;
        }

        if (*param) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\" in \"%V\" "
                               "directive", &value[i], &cmd->name);
            return NGX_CONF_ERROR;
        }

        *param = &value[i];
    }

    rlcf->local_share = 1;

    if (rlcf->fail != NGX_HTTP_REDIS_RATELIMIT_FAIL_LOCAL) {
        return NGX_CONF_OK;
    }

    if (share_value) {
        s.data = share_value->data + 12;
        s.len = share_value->len - 12;

        share = NGX_ERROR;

        if (s.len > 2 && s.data[0] == '1' && s.data[1] == '/') {
            share = ngx_atoi(s.data + 2, s.len - 2);
        }

        if (share == NGX_ERROR || share == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid value \"%V\" in \"%V\" directive, "
                               "local_share must be 1/N with N a positive "
                               "number", &s, &cmd->name);
            return NGX_CONF_ERROR;
        }

        rlcf->local_share = share;
    }

    return ngx_http_redis_ratelimit_local_zone(cf, cmd, zone,
                                               &rlcf->local_zone);
}


/* like ngx_conf_set_enum_slot(), with an error that names the directive */

static char *
ngx_http_redis_ratelimit_enum(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char  *p = conf;

    u_char           *last;
    ngx_str_t        *value;
    ngx_uint_t       *field, i;
    ngx_conf_enum_t  *e;
    u_char            allowed[NGX_MAX_CONF_ERRSTR];

    field = (ngx_uint_t *) (p + cmd->offset);

    if (*field != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    e = cmd->post;

    for (i = 0; e[i].name.len != 0; i++) {
        if (e[i].name.len == value[1].len
            && ngx_strcasecmp(e[i].name.data, value[1].data) == 0)
        {
            *field = e[i].value;
            return NGX_CONF_OK;
        }
    }

    last = allowed;

    for (i = 0; e[i].name.len != 0; i++) {
        last = ngx_slprintf(last, allowed + sizeof(allowed), "%s\"%V\"",
                            i == 0 ? "" : (e[i + 1].name.len ? ", " : " or "),
                            &e[i].name);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid value \"%V\" in \"%V\" directive, "
                       "it must be %*s", &value[1], &cmd->name,
                       (size_t) (last - allowed), allowed);

    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_http_redis_ratelimit_init(ngx_conf_t *cf)
{
    rrl_set_logger(ngx_http_redis_ratelimit_core_log, NULL);

    if (ngx_http_redis_ratelimit_handler_init(cf) != NGX_OK) {
        return NGX_ERROR;
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
