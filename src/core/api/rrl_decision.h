/*
 * The handler's rules (see decision.hpp): what a request's outcome means
 * for its status, response, the deny cache, the log, headers and metrics.
 */

#ifndef RRL_DECISION_H
#define RRL_DECISION_H

#include "api/rrl.h"
#include "api/rrl_call_args.h"

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

/*
 * passed: the decoded decision's (reply, cached, local); delay_us: its
 * wait, rrl_call_delay()'s. RRL_ERROR on an unknown outcome or fail mode.
 */
int rrl_decide(const rrl_settings_t *settings, int outcome, int passed,
    int64_t delay_us, rrl_verdict_t *verdict) RRL_NOEXCEPT;

/* $redis_ratelimit_status's text, NUL-terminated; "" for none */
const char *rrl_status_text(unsigned status, size_t *len) RRL_NOEXCEPT;

/*
 * The log line of a rejection by limit, as rrl::capi::put() writes it: its
 * rate the zone's as written (zone_rate), or an applied override's
 * ("2r/10s (override)", "block (override)"); its length, 0 on failure.
 */
size_t rrl_rejection_message(char *buf, size_t size, int dry_run, int outcome,
    const rrl_call_limit_t *limit, const char *zone_rate,
    size_t zone_rate_len, int64_t retry_after) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_DECISION_H */
