/*
 * Settlement (settle=VALUE of "redis_ratelimit"): after a request, its
 * actual cost A against the estimate E charged up front. The value's
 * rule, the settle form's arguments, and the settlement's call: one of its
 * own on the worker's engine, in the background, in the turn's batches.
 */

#ifndef RRL_SETTLE_H
#define RRL_SETTLE_H

#include "base/rrl_settle_types.h"
#include "api/rrl.h"
#include "api/rrl_call_args.h"
#include "api/rrl_decision.h"
#include "api/rrl_engine.h"
#include "api/rrl_lease.h"

#ifdef __cplusplus
extern "C" {
#endif

int rrl_settle_value(const unsigned char *text, size_t len, uint64_t *actual)
    RRL_NOEXCEPT;

/*
 * Why text is no settle=VALUE (for the log): "over the maximum of
 * 1000000000000" or "not a number"; "" when it is one.
 */
const char *rrl_settle_why(const unsigned char *text, size_t len)
    RRL_NOEXCEPT;

/*
 * The plan of a request's limit with settle=, its status RRL_STATUS_*: only
 * the units Redis or a lease took (passed, delayed, the dry run's delay),
 * of a limit with a key; SETTLED, nothing sent, when A == E or it was
 * charged under an "unlimited" override (charged->override: none taken). *out: the limit to settle with its zone's numbers
 * (zone: a batch names a zone once, not with an override's), the key and E
 * of charged, A of text (settle=VALUE's value, rrl_settle_value()), T the
 * reply's redis_now_us, or a lease decision's (leased: charged's
 * settle_at_us); with overrides=on, charged's limit, period and burst (as
 * decoded: the limit applied) in settle_limit, _period_ms and _burst. Returns an RRL_SETTLE_* (FAILED: not a number).
 */
int rrl_settle_plan(unsigned status, int leased, int64_t redis_now_us,
    const rrl_call_limit_t *zone, const rrl_call_limit_t *charged,
    const unsigned char *text, size_t len, rrl_call_limit_t *out)
    RRL_NOEXCEPT;

/*
 * The settle form of n limits, each with cost (E, the units charged up
 * front), settle_actual (A) and settle_at_us (T, Redis's time of the
 * charge) set: as rrl_call_args() lays out a check (RRL_CALL_ARGC(n)
 * arguments) but ARGV[1] is "settle" and each limit's cost is "E:A:T", or
 * "E:A:T:N:P:B" with the limit the charge applied (an overrides=on
 * limit's settle_limit, _period_ms and _burst, when set).
 * The sizes and the layout of rrl_call_args(); 0 / RRL_ERROR: bad input.
 */
size_t rrl_settle_args_size(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;
int rrl_settle_args(char *buf, size_t size, const char *sha1,
    size_t sha1_len, const rrl_call_limit_t *limits, size_t n,
    const char **argv, size_t *argvlen) RRL_NOEXCEPT;

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
 * A limit of a lease zone, settled in the key's entry where exact. A
 * refund (A < E): into the lease that decided it (limit->settle_at_us is
 * the lease's taken_at_us) while alive at now_us (now_us < lease_end_us,
 * the zone's numbers). A charge (A > E), whatever decided the request:
 * k = min(A - E, units) from any lease alive (units -= k, used += k,
 * limit->settle_actual -= k). Returns 1 when settled there (A == E, or
 * k == A - E), 0: the rest goes to Redis.
 */
int rrl_lease_settle(rrl_lease_entry_t *entry, rrl_call_limit_t *limit,
    int64_t now_us) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_SETTLE_H */
