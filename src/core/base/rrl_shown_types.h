/*
 * What a limited request shows (see shown.hpp): its header fields, its
 * variables and the problem+json body of its rejection, all from its
 * limits and its decision.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_shown.h.
 */

#ifndef RRL_SHOWN_TYPES_H
#define RRL_SHOWN_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned                   status;    /* RRL_STATUS_*; 0: not limited */
    int                        decided;   /* decision and results are set */
    const rrl_decision_t      *decision;
    const rrl_limit_result_t  *results;   /* one per limit */
    const rrl_call_limit_t    *limits;    /* those with a key */
    size_t                     nlimits;
    unsigned                   show;      /* RRL_SHOW_*: the header fields */
    uint64_t                   local_share; /* K of local_share=1/K */
    int                        replied;   /* Redis answered: rtt_us is set */
    int64_t                    rtt_us;
    int64_t                    delay_us;  /* 0: not delayed (delay=D) */
} rrl_shown_t;

/* a header field: the name is static, the value in the caller's buffer */
typedef struct {
    const char  *name;
    size_t       name_len;
    const char  *value;
    size_t       value_len;
} rrl_field_t;

/* X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy, RateLimit, ... */
#define RRL_SHOWN_FIELDS  6

#define RRL_VAR_STATUS     0   /* $redis_ratelimit_status */
#define RRL_VAR_REMAINING  1   /* $redis_ratelimit_remaining */
#define RRL_VAR_RESET      2   /* $redis_ratelimit_reset */
#define RRL_VAR_ZONE       3   /* $redis_ratelimit_zone */
#define RRL_VAR_RTT        4   /* $redis_ratelimit_rtt */
#define RRL_VAR_DELAY      5   /* $redis_ratelimit_delay */
#define RRL_VAR_COST       6   /* $redis_ratelimit_cost */

#ifdef __cplusplus
}
#endif

#endif /* RRL_SHOWN_TYPES_H */
