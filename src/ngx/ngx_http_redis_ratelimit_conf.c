
/*
 * The directives' parsers ("redis_ratelimit_server" has a file of its
 * own): the grammar and its checks are the core's (rrl_conf.h), which
 * gets each word and gives back values or a message; here is what needs
 * nginx: compiling variables, the zones, logging with FILE:LINE, and
 * nginx's readers of times and sizes, handed to the core.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"


static ngx_http_redis_ratelimit_zone_t *ngx_http_redis_ratelimit_find_zone(
    ngx_http_redis_ratelimit_main_conf_t *rmcf, ngx_str_t *name);
static ngx_int_t ngx_http_redis_ratelimit_words(ngx_conf_t *cf,
    rrl_conf_t *c, ngx_uint_t first);
static int64_t ngx_http_redis_ratelimit_parse_time(const char *text,
    size_t len);
static int64_t ngx_http_redis_ratelimit_parse_size(const char *text,
    size_t len);


char *
ngx_http_redis_ratelimit_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_redis_ratelimit_main_conf_t *rmcf = conf;

    ngx_str_t                         *value;
    rrl_conf_t                         c;
    rrl_zone_conf_t                   *zc;
    ngx_http_redis_ratelimit_zone_t   *zone, *first;
    ngx_http_compile_complex_value_t   ccv;

    value = cf->args->elts;

    zone = ngx_array_push(&rmcf->zones);
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(zone, sizeof(ngx_http_redis_ratelimit_zone_t));

    zone->file = cf->conf_file->file.name.data;
    zone->line = cf->conf_file->line;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &zone->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_http_redis_ratelimit_conf_init(&c, RRL_CONF_ZONE, cmd);

    if (ngx_http_redis_ratelimit_words(cf, &c, 2) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    zc = &c.u.zone;

    ngx_http_redis_ratelimit_str(&zone->name, &zc->name);
    ngx_http_redis_ratelimit_str(&zone->rate, &zc->rate);
    rrl_zone_call_limit(zc, (char *) zone->name.data, zone->name.len,
                        &zone->call);
    zone->capacity = (ngx_uint_t) zc->capacity;
    zone->lease = zc->lease;
    rmcf->leases |= (zc->lease != 0);

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

    return NGX_CONF_OK;
}


char *
ngx_http_redis_ratelimit_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_loc_conf_t *rlcf = conf;

    ngx_int_t                          rc;
    ngx_str_t                         *value, s;
    ngx_uint_t                         i, settle;
    rrl_conf_t                         c;
    ngx_http_complex_value_t          *cv;
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

    limit->file = cf->conf_file->file.name.data;
    limit->line = cf->conf_file->line;

    ngx_http_redis_ratelimit_conf_init(&c, RRL_CONF_LIMIT, cmd);

    for (i = 1; i < cf->args->nelts; i++) {
        rc = ngx_http_redis_ratelimit_conf_word(cf, &c, &value[i]);

        if (rc == NGX_ERROR) {
            return NGX_CONF_ERROR;
        }

        if (rc == NGX_OK) {
            continue;
        }

        /* cost=$VAR or settle=VALUE: the core says which */
        settle = (c.u.limit.host_word == RRL_CONF_HOST_SETTLE);
        ngx_http_redis_ratelimit_str(&s, settle ? &c.u.limit.settle
                                                : &c.u.limit.variable);

        cv = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (cv == NULL) {
            return NGX_CONF_ERROR;
        }

        *(settle ? &limit->settle : &limit->cost_value) = cv;

        ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

        ccv.cf = cf;
        ccv.value = &s;
        ccv.complex_value = cv;

        if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_http_redis_ratelimit_conf_word(cf, &c, NULL) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_http_redis_ratelimit_str(&limit->zone_name, &c.u.limit.zone_name);
    limit->cost = (ngx_uint_t) c.u.limit.cost;
    limit->delay = c.u.limit.delay;

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


/* open | closed | local [local_zone=NAME:SIZE] [local_share=1/N] */

char *
ngx_http_redis_ratelimit_fail_mode(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_loc_conf_t *rlcf = conf;

    char        *rv;
    rrl_conf_t   c;

    rv = ngx_http_redis_ratelimit_set_value(cf, cmd, conf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    ngx_http_redis_ratelimit_conf_init(&c, RRL_CONF_FAIL, cmd);
    c.u.fail.local = (rlcf->fail == RRL_FAIL_LOCAL);

    if (ngx_http_redis_ratelimit_words(cf, &c, 2) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    rlcf->local_share = (ngx_uint_t) c.u.fail.share;

    if (!c.u.fail.local) {
        return NGX_CONF_OK;
    }

    return ngx_http_redis_ratelimit_local_zone(cf, cmd, &c.u.fail,
                                               &rlcf->local_zone);
}


/*
 * The first word of a directive known to the core (RRL_CONF_VALUE): stock
 * slots' messages would not name the directive, or the range.
 */

char *
ngx_http_redis_ratelimit_set_value(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    char  *p = conf;

    ngx_str_t   *value;
    ngx_uint_t  *field;
    rrl_conf_t   c;

    field = (ngx_uint_t *) (p + cmd->offset);

    if (*field != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ngx_http_redis_ratelimit_conf_init(&c, RRL_CONF_VALUE, cmd);

    if (ngx_http_redis_ratelimit_conf_word(cf, &c, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    *field = (ngx_uint_t) c.u.value;

    return NGX_CONF_OK;
}


/* info | notice | warn | error: the core gives their rank */

char *
ngx_http_redis_ratelimit_log_level(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_redis_ratelimit_loc_conf_t *rlcf = conf;

    static ngx_uint_t  levels[] = {
        NGX_LOG_INFO, NGX_LOG_NOTICE, NGX_LOG_WARN, NGX_LOG_ERR
    };

    char  *rv;

    rv = ngx_http_redis_ratelimit_set_value(cf, cmd, conf);

    if (rv == NGX_CONF_OK) {
        rlcf->log_level = levels[rlcf->log_level];
    }

    return rv;
}


/* zones may be defined after the "redis_ratelimit" lines that use them */

ngx_int_t
ngx_http_redis_ratelimit_resolve_limits(ngx_conf_t *cf, ngx_array_t *limits)
{
    char                                   err[RRL_CONF_ERR_MAX + 1];
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

        /* the zone's settlements are shown; a log-phase handler settles */
        if (limit[i].settle) {
            limit[i].zone->settle = 1;
            rmcf->settle = 1;
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

        if (rrl_limit_delay_check(limit[i].delay,
                                  limit[i].zone->call.algorithm,
                                  limit[i].zone->call.burst,
                                  (char *) limit[i].zone_name.data,
                                  limit[i].zone_name.len, "redis_ratelimit",
                                  err)
            != RRL_OK)
        {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s in %s:%ui", err,
                          limit[i].file, limit[i].line);
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


/* the words from first on, none of them the shim's, and the checks */

static ngx_int_t
ngx_http_redis_ratelimit_words(ngx_conf_t *cf, rrl_conf_t *c,
    ngx_uint_t first)
{
    ngx_str_t   *value;
    ngx_uint_t   i;

    value = cf->args->elts;

    for (i = first; i < cf->args->nelts; i++) {
        if (ngx_http_redis_ratelimit_conf_word(cf, c, &value[i]) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return ngx_http_redis_ratelimit_conf_word(cf, c, NULL);
}


void
ngx_http_redis_ratelimit_conf_init(rrl_conf_t *c, int kind,
    ngx_command_t *cmd)
{
    rrl_conf_init(c, kind, (char *) cmd->name.data);

    c->parse_time = ngx_http_redis_ratelimit_parse_time;
    c->parse_size = ngx_http_redis_ratelimit_parse_size;
    c->min_size = 8 * ngx_pagesize;   /* as limit_req's zones */
}


ngx_int_t
ngx_http_redis_ratelimit_conf_word(ngx_conf_t *cf, rrl_conf_t *c,
    ngx_str_t *word)
{
    int  rc;

    if (word) {
        rc = rrl_conf_word(c, (char *) word->data, word->len);

    } else {
        rc = rrl_conf_done(c);
    }

    if (rc == RRL_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", c->err);
        return NGX_ERROR;
    }

    return (rc == RRL_CONF_HOST) ? NGX_DECLINED : NGX_OK;
}


static int64_t
ngx_http_redis_ratelimit_parse_time(const char *text, size_t len)
{
    ngx_str_t  s = { len, (u_char *) text };

    return ngx_parse_time(&s, 0);
}


static int64_t
ngx_http_redis_ratelimit_parse_size(const char *text, size_t len)
{
    ngx_str_t  s = { len, (u_char *) text };

    return ngx_parse_size(&s);
}
