/*
 * Settlement (settle=VALUE of "redis_ratelimit"): after a request, its
 * actual cost A against the estimate E charged up front. The value's
 * rule, the settle form's arguments, and the settlement's call: one of its
 * own on the worker's engine, in the background, in the turn's batches.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * rules are lease/settle.hpp's, their C API api/rrl_settle.h.
 */

#ifndef RRL_SETTLE_TYPES_H
#define RRL_SETTLE_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"
#include "base/rrl_decision_types.h"
#include "base/rrl_engine_types.h"
#include "base/rrl_lease_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a settlement's result in the metrics (RRL_METRICS_SETTLE_RESULTS) */
#define RRL_SETTLE_SETTLED  0  /* refunded, charged, or nothing to settle */
#define RRL_SETTLE_FAILED   1  /* no number, or Redis failed: E stays */

/* a limit's plan (rrl_settle_plan()), besides SETTLED (A == E), FAILED */
#define RRL_SETTLE_NONE    (-1)  /* not settled: Redis or a lease took none */
#define RRL_SETTLE_SEND     2    /* A != E: to the key's lease, else Redis */

/* the largest settle=VALUE (rrl::settle_value()) */
#define RRL_SETTLE_MAX   1000000000000ULL

/*
 * What a settlement brought: results NULL when the call failed or was not
 * made (error says why, error_len 0: not made); else one per limit, the
 * check of each limit's cost after the settlement (not committed) as
 * rrl::call_reply_decode() decodes it into results and *decision, with
 * Redis's time redis_now_us. limits are the settlement's copies (keys
 * included), valid during the call only.
 */
typedef void (*rrl_settled_pt)(void *arg, const rrl_call_limit_t *limits,
    size_t n, const rrl_limit_result_t *results,
    const rrl_decision_t *decision, int64_t redis_now_us, int64_t sent_us,
    const char *error, size_t error_len);

#ifdef __cplusplus
}
#endif

#endif /* RRL_SETTLE_TYPES_H */
