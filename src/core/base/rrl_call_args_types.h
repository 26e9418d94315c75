/*
 * The arguments of a request's script call (see call_args.hpp), built by
 * the core from plain values, and where each one is in argv.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_call_args.h.
 */

#ifndef RRL_CALL_ARGS_TYPES_H
#define RRL_CALL_ARGS_TYPES_H

#include "base/rrl_types.h"

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
 * none is given back), or a renewal's ahead "0:W:0:0:1" (the next
 * window's units: fixed_window, sliding_window), and its reply has
 * RRL_REPLY_LEASE more integers: the units granted and the lease's
 * lifetime in us (both 0 unless passed; an ahead's: until the end of the
 * next window)
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
     * the zone's own rate and burst (rrl::call_limit()), which bound a
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
    /* inputs, set before the call (rrl_engine_call()) */
    uint64_t              lease_want;     /* W */
    uint64_t              lease_back;     /* B */
    int64_t               lease_back_at;  /* T */
    /* a renewal of the next window's units: "0:W:0:0:1" */
    int                   lease_ahead;
    /* set by rrl::call_reply_decode() */
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

#ifdef __cplusplus
}
#endif

#endif /* RRL_CALL_ARGS_TYPES_H */
