/*
 * The handler's rules (see decision.hpp): what a request's outcome means
 * for its status, response, the deny cache, the log, headers and metrics.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_decision.h.
 */

#ifndef RRL_DECISION_TYPES_H
#define RRL_DECISION_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* $redis_ratelimit_status; 0: not limited */
#define RRL_STATUS_PASSED            1
#define RRL_STATUS_REJECTED          2
#define RRL_STATUS_REJECTED_DRY_RUN  3
#define RRL_STATUS_FAILED_OPEN       4
#define RRL_STATUS_FAILED_CLOSED     5
#define RRL_STATUS_FAILED_LOCAL      6
#define RRL_STATUS_DELAYED           7
#define RRL_STATUS_DELAYED_DRY_RUN   8

#define RRL_FAIL_OPEN    0
#define RRL_FAIL_CLOSED  1
#define RRL_FAIL_LOCAL   2

/* the headers a decided request shows (bits) */
#define RRL_SHOW_LEGACY        1   /* X-RateLimit-* */
#define RRL_SHOW_DRAFT         2   /* RateLimit-Policy, RateLimit */
#define RRL_SHOW_RETRY_AFTER   4
#define RRL_SHOW_LOCAL_LIMITS  8   /* limits as this server allows alone */

#define RRL_OUTCOME_NO_KEY        0   /* every key empty: no limit */
#define RRL_OUTCOME_REPLY         1   /* Redis's reply, decoded */
#define RRL_OUTCOME_FAILED        2   /* no call, an error, a bad reply */
#define RRL_OUTCOME_CACHED        3   /* the deny cache rejected */
#define RRL_OUTCOME_LOCAL         4   /* the local zone decided */
#define RRL_OUTCOME_LOCAL_FAILED  5   /* the local zone could not */

/* a location's settings */
typedef struct {
    unsigned  fail;           /* RRL_FAIL_* */
    int       dry_run;
    unsigned  status_code;
    int       problem_json;
    unsigned  headers;        /* RRL_SHOW_LEGACY | RRL_SHOW_DRAFT, or 0 */
    uint64_t  local_share;    /* K of local_share=1/K */
} rrl_settings_t;

typedef struct {
    unsigned  status;         /* RRL_STATUS_* */
    unsigned  code;           /* the response's status; 0: the request goes on */
    int       decided;        /* a decoded decision backs headers, variables */
    int       ask_local;      /* fail local: decide again with its outcome */
    int       learn;          /* the deny cache keeps the rejection */
    int       log;            /* the rejection is logged */
    int       problem;        /* the handler sends a problem+json body */
    unsigned  show;           /* RRL_SHOW_* */
    int64_t   delay_us;       /* $redis_ratelimit_delay, dry run too; 0: none */
    uint64_t  wait_ms;        /* the delay to apply; 0: none, dry run */
} rrl_verdict_t;

#ifdef __cplusplus
}
#endif

#endif /* RRL_DECISION_TYPES_H */
