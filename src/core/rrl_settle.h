/*
 * Settlement (settle=VALUE of "redis_ratelimit"): after a request, its
 * actual cost A against the estimate E charged up front. The value's
 * rule, the settle form's arguments, and the settlement's call: one of its
 * own on the worker's engine, in the background, in the turn's batches.
 */

#ifndef RRL_SETTLE_H
#define RRL_SETTLE_H

#include "rrl.h"
#include "rrl_call_args.h"
#include "rrl_decision.h"
#include "rrl_engine.h"
#include "rrl_lease.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a settlement's result in the metrics (RRL_METRICS_SETTLE_RESULTS) */
#define RRL_SETTLE_SETTLED  0  /* refunded, charged, or nothing to settle */
#define RRL_SETTLE_FAILED   1  /* no number, or Redis failed: E stays */

/*
 * settle=VALUE evaluated: RRL_OK and *actual when text is a whole number
 * of decimal digits alone (no sign, blank or fraction) of at most
 * RRL_SETTLE_MAX; RRL_ERROR when it is empty, not such a number or over.
 */
#define RRL_SETTLE_MAX  1000000000000ULL

int rrl_settle_value(const unsigned char *text, size_t len, uint64_t *actual)
    RRL_NOEXCEPT;

/*
 * The settle form of n limits, each with cost (E, the units charged up
 * front), settle_actual (A) and settle_at_us (T, Redis's time of the
 * charge) set: as rrl_call_args() lays out a check (RRL_CALL_ARGC(n)
 * arguments) but ARGV[1] is "settle" and each limit's cost is "E:A:T".
 * The sizes and the layout of rrl_call_args(); 0 / RRL_ERROR: bad input.
 */
size_t rrl_settle_args_size(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;
int rrl_settle_args(char *buf, size_t size, const char *sha1,
    size_t sha1_len, const rrl_call_limit_t *limits, size_t n,
    const char **argv, size_t *argvlen) RRL_NOEXCEPT;

/*
 * What a settlement brought: results NULL when the call failed or was not
 * made (error says why, error_len 0: not made); else one per limit, the
 * check of each limit's cost after the settlement (not committed) as
 * rrl_call_reply_decode() decodes it into results and *decision, with
 * Redis's time redis_now_us. limits are the settlement's copies (keys
 * included), valid during the call only.
 */
typedef void (*rrl_settled_pt)(void *arg, const rrl_call_limit_t *limits,
    size_t n, const rrl_limit_result_t *results,
    const rrl_decision_t *decision, int64_t redis_now_us, int64_t sent_us,
    const char *error, size_t error_len);

/*
 * Settles n limits (copied, keys included; zones[i]: limit i's zone, for
 * the plans) in one call of the script (sha) on engine, in the turn's
 * batches. settled(arg, ...) runs once: later, from the event loop
 * (RRL_OK), or at once when the call is not made (RRL_ERROR). No request
 * is needed: the client may have gone.
 */
int rrl_settle(rrl_engine_t *engine, const char *sha, size_t sha_len,
    const rrl_call_limit_t *limits, const void *const *zones, size_t n,
    int64_t sent_us, rrl_settled_pt settled, void *arg) RRL_NOEXCEPT;

/*
 * A limit of a lease zone decided from its lease (limit->settle_at_us is
 * the lease's taken_at_us): settled in the entry when that is exact: the
 * same lease alive at now_us (taken_at_us equal, now_us < lease_end_us,
 * the zone's numbers), and for a charge (A > E) A - E units left in it.
 * Returns 1 when settled there (units and used changed), 0: go to Redis.
 */
int rrl_lease_settle(rrl_lease_entry_t *entry, const rrl_call_limit_t *limit,
    int64_t now_us) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_SETTLE_H */
