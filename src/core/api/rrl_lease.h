/*
 * The lease table's rules (lease=P%): each nginx server holds per key a
 * lease, units taken from the key's Redis state at once; requests consume
 * them here without Redis, one worker renews in the background, and the
 * units left of an ended lease are given back where exact. The sizing and
 * renewal rules are lease.hpp's.
 *
 * All *_us times are the shim's monotonic clock, except taken_at_us
 * (Redis's time) and wall_us (the wall clock, us since the epoch: Redis's
 * windows are aligned on it).
 */

#ifndef RRL_LEASE_H
#define RRL_LEASE_H

#include "base/rrl_lease_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Decides a request of n limits at now_us from its keys' entries
 * (entries[i] NULL or an entry of the table): 1 when every limit's entry is
 * usable (the same zone's numbers, now_us < lease_end_us, units >= cost):
 * consumes each limit's cost (units -= cost, used += cost), counts the
 * demand, and writes each limit's result into results[i] (passed, known -
 * used (>= 0, at most what a pass leaves), the time until reset_end_us, no
 * retry); renew[i] = 1 for each limit to renew now (its renewing_until_us
 * set to now_us + renew_timeout_us), else 0. 0: not decided, nothing
 * changed.
 */
int rrl_lease_decide(const rrl_lease_limit_t *limits,
    rrl_lease_entry_t *const *entries, size_t n, int64_t now_us,
    int64_t renew_timeout_us, rrl_limit_result_t *results, int *renew)
    RRL_NOEXCEPT;

/*
 * For a call to Redis of a limit (cost 0: a renewal): counts the demand,
 * *want = cost + the lease's size; *back and *back_at: the units left of
 * an ended lease and Redis's time it was taken (0 and 0 for none, and
 * always for fixed_window, whose window has moved on), then the entry's
 * units are 0. entry NULL: a key never seen (size 1, nothing back).
 */
void rrl_lease_want(const rrl_lease_limit_t *limit, rrl_lease_entry_t *entry,
    int64_t now_us, int64_t wall_us, uint64_t *want, uint64_t *back,
    int64_t *back_at) RRL_NOEXCEPT;

/*
 * After a reply that passed the limit with granted units G and the lease's
 * lifetime ttl_us (from redis_now_us, Redis's time; the call was sent at
 * sent_us): puts G - cost into the entry, a new lease (RRL_LEASE_TAKEN) or
 * added to the one alive (RRL_LEASE_RENEWED), and what the reply showed.
 * Returns the event.
 */
int rrl_lease_learn(const rrl_lease_limit_t *limit, rrl_lease_entry_t *entry,
    const rrl_limit_result_t *result, uint64_t granted, int64_t ttl_us,
    int64_t redis_now_us, int64_t sent_us, int64_t now_us) RRL_NOEXCEPT;

/* A renewal failed or was refused: none in flight any more. */
void rrl_lease_renewal_failed(rrl_lease_entry_t *entry) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_LEASE_H */
