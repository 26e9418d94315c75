/*
 * The lease rules on a request's call limits (rrl_call_args_types.h), and
 * a lease's renewal: a call of its own on the worker's engine, in the
 * background.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * rules are lease/lease_call.hpp's, their C API api/rrl_lease_call.h.
 */

#ifndef RRL_LEASE_CALL_TYPES_H
#define RRL_LEASE_CALL_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"
#include "base/rrl_engine_types.h"
#include "base/rrl_lease_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRL_LEASE_NONE     0  /* no limit of the request has lease= */
#define RRL_LEASE_DECIDED  1  /* from leases: results and decision set */
#define RRL_LEASE_ASK      2  /* ask Redis: the limits carry what to ask */

/* how a call for a lease limit ended: every call ends once, one of these */
#define RRL_LEASE_CALL_UNSENT    0  /* never sent: nothing done in Redis */
#define RRL_LEASE_CALL_FAILED    1  /* no answer (failed, timed out, the
                                       request gone): done or not */
#define RRL_LEASE_CALL_REJECTED  2  /* the request rejected: no commit */
#define RRL_LEASE_CALL_PASSED    3  /* the request passed: its grants */

/*
 * What a renewal brings: key is the Redis key; how and result as
 * rrl::lease_call_learn() takes them; limit's lease_granted and
 * lease_ttl_us decoded.
 */
typedef void (*rrl_lease_learned_pt)(void *arg, const char *key,
    size_t key_len, const rrl_call_limit_t *limit,
    const rrl_limit_result_t *result, int how, int64_t redis_now_us,
    int64_t sent_us);

#ifdef __cplusplus
}
#endif

#endif /* RRL_LEASE_CALL_TYPES_H */
