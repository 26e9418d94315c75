/*
 * The lease rules (rrl_lease.h) on a request's call limits
 * (rrl_call_args.h), and a lease's renewal: a call of its own on the
 * worker's engine, in the background.
 */

#ifndef RRL_LEASE_CALL_H
#define RRL_LEASE_CALL_H

#include "base/rrl_lease_call_types.h"
#include "api/rrl.h"
#include "api/rrl_call_args.h"
#include "api/rrl_engine.h"
#include "api/rrl_lease.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A request of n limits at now_us; entries[i]: limit i's entry in the lease
 * table, or NULL (none, or not a lease zone's). Without ask: DECIDED when
 * every limit is a lease zone's with units left: taken, results[i] limit
 * i's result (rrl_lease_decide()) and decision the request's, at wall_us
 * (X-RateLimit-Reset counts from it), renew[i] the units a
 * renewal of limit i wants now (0: none; the entry then has one in
 * flight), settle_at_us the lease's taken_at_us (a settlement's T); else
 * NONE and nothing changed. With ask (the request goes to Redis: after the
 * deny cache, which may answer it without a call), ASK: each lease limit's
 * lease_want, lease_back and lease_back_at are set: an ended lease's units
 * go back with the call; it wants its cost alone when some limit of the
 * request has no lease= or a cost over its largest lease (such a request
 * is never decided from leases, and a lease would be units no request of
 * its location uses) or while a grant beyond a cost is in flight for its
 * entry; else a lease too, and
 * this call's grant is the one in flight (lease_want > cost), until
 * renew_timeout_us or its end (rrl_lease_call_learn()).
 */
int rrl_lease_call_check(rrl_call_limit_t *limits,
    rrl_lease_entry_t *const *entries, size_t n, int ask, int64_t now_us,
    int64_t wall_us, int64_t renew_timeout_us, rrl_limit_result_t *results,
    rrl_decision_t *decision, uint64_t *renew) RRL_NOEXCEPT;

/*
 * The end of a call for a lease limit (how: RRL_LEASE_CALL_*; result:
 * Redis's answer for the limit, REJECTED and PASSED only) into its key's
 * entry: a pass's grant (limit->lease_granted) is added; the call's grant
 * in flight (lease_want > cost), if any, is over on every end, and the
 * debt it owed with it (nothing granted was kept). A grant whose entry
 * was dropped meanwhile (the table full: no grant in flight there any
 * more) keeps none of its extra units: the debt it owed is lost with the
 * entry. UNSENT puts the units it was to give back into the entry again,
 * while it is the same ended lease. Returns the metrics' RRL_LEASE_* event
 * (REFUSED when the limit did not pass), -1: none.
 */
int rrl_lease_call_learn(const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int how, rrl_lease_entry_t *entry,
    int64_t redis_now_us, int64_t sent_us, int64_t now_us) RRL_NOEXCEPT;

/*
 * Renews limit's lease (limit and key copied): want units at no cost, one
 * call of the script (sha) on engine (zone: the limit's, for the plans).
 * learned(arg, ...) runs once: later, from the event loop (RRL_OK), or at
 * once when the call is not made (RRL_ERROR; none when out of memory: the
 * entry's renewal then ends at its deadline).
 */
int rrl_lease_renew(rrl_engine_t *engine, const char *sha, size_t sha_len,
    const rrl_call_limit_t *limit, uint64_t want, const void *zone,
    int64_t sent_us, rrl_lease_learned_pt learned, void *arg) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_LEASE_CALL_H */
