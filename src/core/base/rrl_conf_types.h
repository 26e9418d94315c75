/*
 * The types of the directives' grammar (server_conf, zone_conf and
 * limit_conf): the shim hands over a directive's words one at a time and
 * gets values, or a message that names the directive and the bad word, to
 * log with the file and line. Every string given back points into a word.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_conf.h.
 */

#ifndef RRL_CONF_TYPES_H
#define RRL_CONF_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"
#include "base/rrl_engine_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a word is the shim's to finish: an address, a variable */
#define RRL_CONF_HOST  1

typedef struct {
    const char  *data;
    size_t       len;
} rrl_conf_str_t;

/* "redis_ratelimit_server": the addresses, then the parameters */

#define RRL_SERVER_SINGLE    0
#define RRL_SERVER_CLUSTER   1
#define RRL_SERVER_SENTINEL  2

/* a time in ms as nginx reads it (ngx_parse_time()), -1: not a time */
typedef int64_t (*rrl_time_parse_pt)(const char *text, size_t len);
/* a size as nginx reads it (ngx_parse_size()), -1: not a size */
typedef int64_t (*rrl_size_parse_pt)(const char *text, size_t len);

typedef struct {
    int             mode;
    uint64_t        timeout_ms;
    uint64_t        connect_timeout_ms;
    uint64_t        cooldown_ms;
    uint64_t        max_failures;
    uint64_t        max_parked;
    int64_t         db;            /* -1: not given, 0 once done */
    rrl_conf_str_t  sentinel_name;
    rrl_conf_str_t  username;
    rrl_conf_str_t  password;
    rrl_conf_str_t  sentinel_password;
    size_t          addresses;
    int             parameters;    /* the addresses are over */
    int             tls;
    rrl_conf_str_t  tls_ca;        /* empty: the system's CAs */
    rrl_conf_str_t  tls_cert;      /* with tls_key: a client certificate */
    rrl_conf_str_t  tls_key;
    rrl_conf_str_t  tls_server_name;  /* empty: each address's host */
    int             tls_verify;    /* -1: not given, 1 once done */
    int             sentinel_tls;  /* -1: not given, as tls once done */
    uint32_t        seen;          /* the parameters given, the core's */
} rrl_server_conf_t;
/* RRL_CONF_HOST: an address word, to resolve */

/* "redis_ratelimit_zone": the words after the key */

typedef struct {
    rrl_conf_str_t  name;
    rrl_conf_str_t  rate;          /* as written */
    int             algorithm;
    uint64_t        limit;         /* N of rate=Nr/PERIOD */
    uint64_t        period_ms;
    uint64_t        burst;         /* as the algorithm uses it, once done */
    uint64_t        capacity;      /* the largest cost, on idle */
    int             overrides;     /* overrides=on */
    unsigned        lease;         /* P of lease=P%, 0: off */
    uint32_t        seen;          /* the parameters given, the core's */
} rrl_zone_conf_t;

/*
 * "redis_ratelimit zone=NAME [cost=N|$VAR] [settle=VALUE]
 * [delay=D | nodelay]"
 */

typedef struct {
    rrl_conf_str_t  zone_name;
    uint64_t        cost;          /* 1 unless cost=N */
    rrl_conf_str_t  cost_arg;      /* N as written, "1" by default */
    rrl_conf_str_t  variable;      /* "$VAR" of the last cost=$VAR */
    uint64_t        delay;         /* D of delay=D, RRL_DELAY_NONE */
    rrl_conf_str_t  delay_word;    /* "delay=D" or "nodelay", or empty */
    rrl_conf_str_t  settle;        /* VALUE of settle=VALUE, or empty */
    int             host_word;     /* RRL_CONF_HOST_*: the host's word */
    uint32_t        seen;          /* the parameters given, the core's */
} rrl_limit_conf_t;
/*
 * RRL_CONF_HOST: a cost=$VAR word, to compile from variable, or a
 * settle=VALUE word (a complex value), to compile from settle; host_word
 * says which
 */
#define RRL_CONF_HOST_COST    0
#define RRL_CONF_HOST_SETTLE  1

/* "redis_ratelimit_fail MODE [local_zone=NAME:SIZE] [local_share=1/N]" */

typedef struct {
    int             local;         /* MODE is "local": set by the caller */
    rrl_conf_str_t  zone_word;     /* the whole local_zone= word, or empty */
    rrl_conf_str_t  share_word;
    uint64_t        share;         /* N, once done */
    /* the local zone, once done: the default one has size 0 */
    rrl_conf_str_t  zone_name;
    rrl_conf_str_t  zone_size_word;
    uint64_t        zone_size;
} rrl_fail_conf_t;

/* the module's own zones, and the default local one */
#define RRL_CONF_METRICS_ZONE  "redis_ratelimit_metrics"
#define RRL_CONF_DENY_ZONE     "redis_ratelimit_deny"
/* the lease table's, and its size without "redis_ratelimit_lease_zone" */
#define RRL_CONF_LEASE_ZONE    "redis_ratelimit_lease"
#define RRL_CONF_LEASE_SIZE    (10 * 1024 * 1024)

/* one directive being parsed */

#define RRL_CONF_SERVER  0
#define RRL_CONF_ZONE    1
#define RRL_CONF_LIMIT   2
#define RRL_CONF_FAIL    3
/*
 * the first word, to u.value, of a directive known by name (value_conf):
 * "redis_ratelimit_status", "..._deny_cache" (0: off), "..._lease_zone",
 * "..._headers" (RRL_SHOW_* bits), "..._fail" (RRL_FAIL_*), "..._log_level"
 * (0: info, 1: notice, 2: warn, 3: error)
 */
#define RRL_CONF_VALUE   4

/* the longest message: nginx logs at most NGX_MAX_CONF_ERRSTR bytes */
#define RRL_CONF_ERR_MAX  1024

typedef struct {
    int                  kind;         /* RRL_CONF_* */
    const char          *directive;    /* NUL-terminated */
    rrl_time_parse_pt    parse_time;   /* RRL_CONF_SERVER */
    rrl_size_parse_pt    parse_size;   /* RRL_CONF_FAIL, RRL_CONF_VALUE */
    uint64_t             min_size;     /* of a zone: RRL_CONF_FAIL, VALUE */
    union {
        rrl_server_conf_t  server;
        rrl_zone_conf_t    zone;
        rrl_limit_conf_t   limit;
        rrl_fail_conf_t    fail;
        uint64_t           value;
    } u;
    char                 err[RRL_CONF_ERR_MAX + 1];  /* NUL-terminated */
} rrl_conf_t;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CONF_TYPES_H */
