/*
 * The types and constants every part of the core and the shim shares:
 * result codes, log levels, algorithms, a limit's result and a request's
 * decision, the reply's layout, the Retry-After and X-RateLimit bounds.
 * Plain C, so that the shim's C and the core's C++ read one definition;
 * the functions over them are the C API's (api/rrl.h and the rest of api/).
 */

#ifndef RRL_TYPES_H
#define RRL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define RRL_NOEXCEPT noexcept
extern "C" {
#else
#define RRL_NOEXCEPT
#endif

#define RRL_OK     0
#define RRL_ERROR  -1

#define RRL_LOG_ERR   0
#define RRL_LOG_WARN  1
#define RRL_LOG_INFO  2

typedef void (*rrl_log_pt)(void *data, int level, const char *msg);

typedef enum {
    RRL_FIXED_WINDOW = 0,
    RRL_SLIDING_LOG,
    RRL_SLIDING_WINDOW,
    RRL_TOKEN_BUCKET,
    RRL_LEAKY_BUCKET,
    RRL_ALGORITHM_COUNT
} rrl_algorithm_e;

#define RRL_DEFAULT_ALGORITHM  RRL_SLIDING_WINDOW

/* "burst=" not given (algorithm.hpp: effective_burst()) */
#define RRL_BURST_UNSET  UINT64_MAX

/* the largest N + burst of sliding_log (algorithm.hpp: max_capacity()) */
#define RRL_SLIDING_LOG_MAX_CAPACITY  10000

/*
 * The longest a key's state may matter (algorithm.hpp:
 * state_lifetime_ms()): zones over it are refused.
 */
#define RRL_MAX_STATE_MS  (UINT64_C(100) * 365 * 86400 * 1000)

/*
 * The cost of a request from a variable's value ("cost=$var"): a positive
 * decimal integer; anything else costs 1 (a client must not escape its
 * limit by sending "0" or garbage); over RRL_MAX_COST, however long, it
 * costs RRL_OVER_COST, which no zone's capacity allows. 64-bit arithmetic:
 * the same on every platform.
 */
#define RRL_MAX_COST   UINT64_C(1000000000)
#define RRL_OVER_COST  (2 * RRL_MAX_COST + 2)

/*
 * Writes the Redis key of one client key in one zone into buf (at least
 * rrl_key_max_len() bytes) and returns its length, 0 on error.
 * Client keys over RRL_KEY_RAW_MAX bytes are replaced by their SHA-1.
 */
#define RRL_KEY_RAW_MAX  128

/* Number of ARGV entries the script takes: 1 + RRL_ARGS_PER_LIMIT * n. */
#define RRL_ARGS_PER_LIMIT   5
#define RRL_REPLY_HEADER     2
#define RRL_REPLY_PER_LIMIT  4
/* a lease limit's reply has this many more: units granted, lease's life (us) */
#define RRL_REPLY_LEASE      2

typedef struct {
    int      passed;
    int64_t  remaining;        /* after this request, >= 0 */
    int64_t  reset_after_us;   /* until usage is back to zero */
    int64_t  retry_after_us;   /* until a retry passes; 0 when passed */
} rrl_limit_result_t;

typedef struct {
    int       passed;          /* every limit passed */
    int64_t   now_us;          /* Redis TIME seen by the script */
    size_t    reported;        /* the limit shown in headers */
    int64_t   remaining;       /* of the reported limit */
    int64_t   reset_unix;      /* seconds, rounded up */
    int64_t   retry_after;     /* seconds, rounded up, >= 1; 0 if passed */
    /*
     * seconds, rounded up, until the reported limit resets (the draft
     * RateLimit "t"): its usage back to zero on a pass; on a rejection,
     * until it would pass, so never more than retry_after
     */
    int64_t   reset_after;
} rrl_decision_t;

/* an error reply's kind, by its first word (redis_errors.hpp) */
#define RRL_REPLY_ERROR        0   /* any other error */
#define RRL_REPLY_NOSCRIPT     1   /* "NOSCRIPT No matching script..." */
#define RRL_REPLY_MOVED        2   /* "MOVED <slot> <host>:<port>" */
#define RRL_REPLY_ASK          3   /* "ASK <slot> <host>:<port>" */
#define RRL_REPLY_TRYAGAIN     4
#define RRL_REPLY_CLUSTERDOWN  5
#define RRL_REPLY_READONLY     6   /* a replica: "READONLY You can't write..." */
#define RRL_REPLY_MASTERDOWN   7
#define RRL_REPLY_LOADING      8

#define RRL_CLUSTER_SLOTS  16384

#define RRL_HOST_MAX  256   /* with its NUL */


/*
 * One key's state in a local (shared memory) zone, for "redis_ratelimit_fail
 * local": a fixed-size POD, all zero when there is none (see local_algorithms.hpp).
 */
typedef struct {
    int64_t  a;
    int64_t  b;
    double   c;
} rrl_local_state_t;

/*
 * The deny cache ("redis_ratelimit_deny_cache"): a rejection Redis sent
 * for a key answers the key's later requests locally, until Redis's own
 * end of it and never after (see deny_entry.hpp). Times are the caller's
 * monotonic clock, in us.
 */
typedef struct {
    int       algorithm;
    uint64_t  limit;
    uint64_t  period_ms;
    uint64_t  burst;       /* as the algorithm uses it (effective_burst) */
    uint32_t  redis;       /* which Redis: a tag of the caller's choice */
    uint64_t  cost;
} rrl_deny_limit_t;

typedef struct {
    rrl_deny_limit_t  limit;           /* the rejected request's */
    int64_t           until_us;        /* rejected before this */
    int64_t           retry_until_us;  /* Redis's end, at the latest */
    int64_t           reset_until_us;  /* usage back to zero */
    int64_t           remaining;
    /* the limit shown: the zone's, or an override's (rrl_deny_keep_shown) */
    int               override;
    uint64_t          shown_limit;
    uint64_t          shown_period_ms;
    uint64_t          shown_burst;
} rrl_deny_entry_t;

/*
 * Metrics ("redis_ratelimit_metrics"): the Prometheus text exposition
 * (format 0.0.4) of the counters the shim keeps in shared memory.
 */

/* requests by $redis_ratelimit_status: index = status - 1 */
#define RRL_METRICS_STATUSES  8

/* failed Redis calls, by kind */
#define RRL_METRICS_ERR_TIMEOUT       0   /* no reply within timeout */
#define RRL_METRICS_ERR_CONNECTION    1   /* none, lost, cannot send */
#define RRL_METRICS_ERR_NOSCRIPT      2
#define RRL_METRICS_ERR_MOVED         3
#define RRL_METRICS_ERR_ASK           4
#define RRL_METRICS_ERR_ERROR_REPLY   5   /* any other error reply */
#define RRL_METRICS_ERR_BAD_REPLY     6   /* not the script's shape */
#define RRL_METRICS_ERR_CIRCUIT_OPEN  7   /* not asked: circuit open */
#define RRL_METRICS_ERR_MAX_PARKED    8   /* not asked: max_parked */
#define RRL_METRICS_ERR_TLS           9   /* a TLS handshake failed */
#define RRL_METRICS_ERR_KINDS         10

/* round-trip time buckets: 0.5 ms .. 1 s, then +Inf */
#define RRL_METRICS_BUCKETS  12

#define RRL_METRICS_CIRCUIT_CLOSED     0
#define RRL_METRICS_CIRCUIT_HALF_OPEN  1
#define RRL_METRICS_CIRCUIT_OPEN       2
#define RRL_METRICS_CIRCUIT_STATES     3

/* redis_ratelimit_overrides_total's kinds: rate, unlimited, block, invalid */
#define RRL_METRICS_OVERRIDE_KINDS  4

/*
 * redis_ratelimit_leases_total's events, by RRL_LEASE_TAKEN, _RENEWED,
 * _GIVEN_BACK, _REFUSED (rrl_lease_types.h): taken, renewed, given_back,
 * refused;
 * redis_ratelimit_lease_requests_total's from, by RRL_LEASE_FROM_LEASE,
 * _FROM_REDIS: lease, redis
 */
#define RRL_METRICS_LEASE_EVENTS  4
#define RRL_METRICS_LEASE_FROM    2

/*
 * redis_ratelimit_settlements_total's results, by RRL_SETTLE_SETTLED,
 * _FAILED (rrl_settle.h): settled, settle_failed
 */
#define RRL_METRICS_SETTLE_RESULTS  2

typedef struct {
    const char  *name;
    size_t       len;
    uint64_t     requests[RRL_METRICS_STATUSES];
    int          overrides;    /* overrides=on: the zone's kinds are shown */
    uint64_t     override_kinds[RRL_METRICS_OVERRIDE_KINDS];
    int          lease;        /* lease=P%: the zone's leases are shown */
    uint64_t     lease_events[RRL_METRICS_LEASE_EVENTS];
    uint64_t     lease_from[RRL_METRICS_LEASE_FROM];
    int          settle;       /* a limit has settle=: settlements shown */
    uint64_t     settle_results[RRL_METRICS_SETTLE_RESULTS];
} rrl_metrics_zone_t;

typedef struct {
    const rrl_metrics_zone_t  *zones;
    size_t                     nzones;
    uint64_t                   errors[RRL_METRICS_ERR_KINDS];
    /* per bucket (not cumulative); the count is their sum */
    uint64_t                   rtt_buckets[RRL_METRICS_BUCKETS];
    uint64_t                   rtt_sum_us;
    uint64_t                   parked;
    uint64_t                   connections;
    uint64_t                   circuits[RRL_METRICS_CIRCUIT_STATES];
} rrl_metrics_t;

/*
 * Header values of draft-ietf-httpapi-ratelimit-headers (-10) and the
 * problem+json body of a rejection (RFC 9457). Each writes the whole value
 * into buf when it fits in size bytes (no NUL) and returns its length
 * either way, as snprintf does: call with size 0 to learn it. 0: a zone
 * name that no structured-field string can hold (not printable ASCII).
 */
typedef struct {
    const char  *zone;
    size_t       zone_len;
    int          algorithm;
    uint64_t     limit;       /* N of rate=Nr/PERIOD */
    uint64_t     period_ms;
    uint64_t     burst;       /* as the algorithm uses it (effective_burst) */
} rrl_policy_t;

#ifdef __cplusplus
}
#endif

#endif /* RRL_TYPES_H */
