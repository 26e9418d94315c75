/*
 * The arguments of a request's script call (see call_args.hpp), built by
 * the core from plain values, and where each one is in argv.
 */

#ifndef RRL_CALL_ARGS_H
#define RRL_CALL_ARGS_H

#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * EVALSHA <sha1> <n> <key 1..n> "" then, per limit i: <algorithm> <N>
 * <period ms> <burst> <cost>; the algorithm is named with the suffix
 * RRL_OVERRIDES_SUFFIX when its zone has overrides=on
 */
#define RRL_CALL_ARGC(n)      (4 + (1 + RRL_ARGS_PER_LIMIT) * (n))
#define RRL_CALL_KEY(i)       (3 + (i))
#define RRL_CALL_ARG(n, i, field)  (4 + (n) + RRL_ARGS_PER_LIMIT * (i) + (field))

#define RRL_CALL_ALGORITHM  0
#define RRL_CALL_LIMIT      1
#define RRL_CALL_PERIOD     2
#define RRL_CALL_BURST      3
#define RRL_CALL_COST       4

/*
 * overrides=on: the algorithm's name in the call ends with this, and the
 * limit's reply has RRL_REPLY_OVERRIDE more integers: the override's kind,
 * then the limit, period (ms) and burst applied
 */
#define RRL_OVERRIDES_SUFFIX  "+overrides"
#define RRL_REPLY_OVERRIDE    4

#define RRL_OVERRIDE_NONE       0   /* no override key */
#define RRL_OVERRIDE_RATE       1   /* "Nr/PERIOD [burst=B]" */
#define RRL_OVERRIDE_UNLIMITED  2
#define RRL_OVERRIDE_BLOCK      3
#define RRL_OVERRIDE_INVALID    4   /* not applied: the zone's rate */
#define RRL_OVERRIDE_KINDS      5

/*
 * lease=P%: the algorithm's name in the call ends with this (never with
 * RRL_OVERRIDES_SUFFIX too), the limit's cost argument is "C:W:B:T" (the
 * request's cost, the units wanted, the units given back of an ended lease
 * of this server, and Redis's time in us when that lease was taken, 0 when
 * none is given back), and its reply has RRL_REPLY_LEASE more integers:
 * the units granted and the lease's lifetime in us (both 0 unless passed)
 */
#define RRL_LEASE_SUFFIX  "+lease"

/* one limit of the request whose key is not empty */
typedef struct {
    const char           *zone;
    size_t                zone_len;
    int                   algorithm;
    uint64_t              limit;       /* N of rate=Nr/PERIOD */
    uint64_t              period_ms;
    uint64_t              burst;       /* as the algorithm uses it */
    /*
     * the zone's own rate and burst (rrl_call_limit()), which bound a
     * delay: limit, period_ms and burst become an override's once decoded;
     * zone_limit 0: as limit, period_ms and burst
     */
    uint64_t              zone_limit;
    uint64_t              zone_period_ms;
    uint64_t              zone_burst;
    uint64_t              cost;
    const unsigned char  *key;         /* the client's, as evaluated */
    size_t                key_len;
    /* its state's Redis key (rrl_key_build()), made once; NULL: not yet */
    const char           *redis_key;
    size_t                redis_key_len;
    uint64_t              delay;       /* D of delay=D; RRL_DELAY_NONE */
    int                   overrides;   /* its zone has overrides=on */
    int                   override;    /* RRL_OVERRIDE_*, once decoded */
    unsigned              lease;       /* P of lease=P%, 0: none */
    /* inputs, set before rrl_call_args() */
    uint64_t              lease_want;     /* W */
    uint64_t              lease_back;     /* B */
    int64_t               lease_back_at;  /* T */
    /* set by rrl_call_reply_decode() */
    uint64_t              lease_granted;  /* G */
    int64_t               lease_ttl_us;   /* the lifetime */
    /* settle=VALUE (rrl_settle.h): A, and T, Redis's time of the charge */
    uint64_t              settle_actual;
    int64_t               settle_at_us;
    /* and the limit the charge applied (overrides=on; 0: not known) */
    uint64_t              settle_limit;
    uint64_t              settle_period_ms;
    uint64_t              settle_burst;
} rrl_call_limit_t;

/* "nodelay", the default: delay=B, never delays */
#define RRL_DELAY_NONE  UINT64_MAX

/*
 * A request's limit: its zone's (zone, as configured), with the cost (the
 * evaluated cost=$VAR's text as rrl_cost_parse() reads it; NULL: cost),
 * the key and delay given; the rest as the zone's. Its Redis key is
 * written into redis_key (rrl_key_max_len(zone->zone_len) bytes), the
 * key the call, the deny cache, the lease table and the local zone use.
 */
void rrl_call_limit(rrl_call_limit_t *limit, const rrl_call_limit_t *zone,
    uint64_t cost, const unsigned char *cost_text, size_t cost_len,
    const unsigned char *key, size_t key_len, uint64_t delay,
    char *redis_key) RRL_NOEXCEPT;

/* the integers of the script's reply to a check of these limits */
size_t rrl_reply_values(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;

/* the most bytes rrl_call_args() writes for these limits; 0: bad algorithm */
size_t rrl_call_args_size(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;

/*
 * Writes the call's RRL_CALL_ARGC(n) arguments into buf (size bytes, from
 * rrl_call_args_size()), each pointed to by argv and its length in argvlen.
 */
int rrl_call_args(char *buf, size_t size, const char *sha1, size_t sha1_len,
    const rrl_call_limit_t *limits, size_t n, const char **argv,
    size_t *argvlen) RRL_NOEXCEPT;

/*
 * Decodes the call's reply as rrl_reply_decode() does, and refuses (logged,
 * RRL_ERROR) one where a limit has more remaining than its zone can ever
 * hold: no reply of the script's. A reply of rrl_reply_values() integers
 * sets each limit's override, and the limit, period and burst of an
 * applied one (block: limit 0) in limits; one of 4 per limit (the deny
 * cache's, the local zone's) leaves them as they are. An unlimited limit
 * is never the reported one. Each limit's lease_granted and lease_ttl_us
 * are set: a lease limit's from a reply of rrl_reply_values() integers
 * when the request passed, else 0 (on RRL_ERROR too); such a reply is
 * refused when a grant is more than W (max(lease_want, cost, 1)), less
 * than max(cost, 1) on a pass, not 0 on a rejected limit, or a lifetime is
 * negative or over the state's bound (RRL_MAX_STATE_MS).
 */
int rrl_call_reply_decode(const int64_t *values, size_t nvalues,
    rrl_call_limit_t *limits, size_t n, rrl_limit_result_t *results,
    rrl_decision_t *decision) RRL_NOEXCEPT;

/*
 * How long a request waits in nginx (delay=D, see delay.hpp), in us: 0
 * unless it passed, else the longest of its leaky_bucket limits' waits.
 * share: K of local_share=1/K when the local zone decided, else 1.
 */
int64_t rrl_call_delay(const rrl_call_limit_t *limits,
    const rrl_limit_result_t *results, size_t n, int passed, uint64_t share)
    RRL_NOEXCEPT;

/*
 * The limit a deny cache entry shows on the requests it rejects: the one
 * the rejection was decided under (an override's), kept from *limit;
 * then written into the limit of such a request.
 */
void rrl_deny_keep_shown(rrl_deny_entry_t *entry,
    const rrl_call_limit_t *limit) RRL_NOEXCEPT;
void rrl_deny_shown(const rrl_deny_entry_t *entry, rrl_call_limit_t *limit)
    RRL_NOEXCEPT;

/*
 * The log line of the first invalid override (RRL_OVERRIDE_INVALID, once
 * decoded) of n limits, as rrl::capi::put() writes it (the key escaped);
 * its length, 0: none invalid, or an error.
 */
size_t rrl_override_message(char *buf, size_t size,
    const rrl_call_limit_t *limits, size_t n) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CALL_ARGS_H */
