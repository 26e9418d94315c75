/*
 * The C API of leases (lease=P%): the lease rules on a request's call
 * limits, and a lease's renewal, a call of its own on the worker's engine,
 * in the background. The rules are lease/lease_call.hpp's (each function
 * here is its C++ namesake's, guarded), the table's lease/lease.hpp's.
 *
 * All *_us times are the shim's monotonic clock, except taken_at_us
 * (Redis's time) and wall_us (the wall clock, us since the epoch: Redis's
 * windows are aligned on it).
 */

#ifndef RRL_LEASE_CALL_H
#define RRL_LEASE_CALL_H

#include "base/rrl_lease_call_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"
#include "api/rrl_engine.h"
#include "api/rrl_request.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * rrl::lease_call_check() on a request, after rrl_request_lease_entry() of
 * each lease limit: RRL_LEASE_NONE, _DECIDED (then rrl_request_renewal()
 * of each limit) or _ASK
 */
int rrl_lease_call_check(rrl_request_t *request, int ask, int64_t now_us,
    int64_t wall_us, int64_t renew_timeout_us) RRL_NOEXCEPT;

/* rrl::lease_call_learn(): the metrics' RRL_LEASE_* event, -1: none */
int rrl_lease_call_learn(const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int how, rrl_lease_entry_t *entry,
    int64_t redis_now_us, int64_t sent_us, int64_t now_us) RRL_NOEXCEPT;

/*
 * rrl::LeaseRenewal::start(): RRL_OK, made; RRL_ERROR, not made
 * (learned() has run then, unless out of memory or bad input)
 */
int rrl_lease_renew(rrl_engine_t *engine, const char *sha, size_t sha_len,
    const rrl_call_limit_t *limit, uint64_t want, const void *zone,
    int64_t sent_us, rrl_lease_learned_pt learned, void *arg) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_LEASE_CALL_H */
