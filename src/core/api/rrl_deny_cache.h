/*
 * How the nginx shim uses the deny cache ("redis_ratelimit_deny_cache"):
 * for which limits, for which Redis, and what it answers for a limit of a
 * request from the key's entry. The rules are local/deny_cache.hpp's; the
 * arithmetic of an entry is rrl.h's rrl_deny_learn() and deny_applies()
 * (local/deny_entry.hpp).
 */

#ifndef RRL_DENY_CACHE_H
#define RRL_DENY_CACHE_H

#include "base/rrl_call_args_types.h"
#include "base/rrl_deny_cache_types.h"
#include "api/rrl.h"
#include "api/rrl_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 1 when the deny cache may answer and learn a limit: not in a dry run
 * (Redis counts every request), nor in a cluster for a zone used with
 * other limits in some location: such a request reserves in each slot's
 * call and gives the reservations back when another slot rejects, so a
 * rejection may have seen a reservation that is given back a round trip
 * later.
 */
int rrl_deny_usable(int dry_run, int cluster, int combined) RRL_NOEXCEPT;

/* rrl::deny_limit(): a request's limit of a zone, all set */
rrl_deny_limit_t rrl_deny_limit(int algorithm, uint64_t limit,
    uint64_t period_ms, uint64_t burst, uint32_t redis, uint64_t cost)
    RRL_NOEXCEPT;

/* rrl::deny_redis_of(): the tag of e's Redis (rrl_deny_limit_t.redis) */
uint32_t rrl_deny_redis_of(const rrl_engine_conf_t *e,
    const rrl_engine_addr_t *addrs, size_t naddrs) RRL_NOEXCEPT;

/*
 * The cache's answer for a limit of a request at now_us, from the key's
 * *entry (NULL: none, or the limit is not usable), written into *result:
 * Redis's values (deny_applies()) when RRL_DENY_REJECTED, otherwise an
 * idle key's (passed, the capacity, no wait), as the limit was not
 * consulted. A request with one limit rejected is decided on its results
 * by rrl_request_decide_at(), with this server's time standing for Redis's.
 */
int rrl_deny_answer(const rrl_deny_entry_t *entry,
    const rrl_deny_limit_t *limit, int64_t now_us, rrl_limit_result_t *result)
    RRL_NOEXCEPT;

/*
 * The limit a deny cache entry shows on the requests it rejects: the one
 * the rejection was decided under (an override's), kept from *limit;
 * then written into the limit of such a request.
 */
void rrl_deny_keep_shown(rrl_deny_entry_t *entry,
    const rrl_call_limit_t *limit) RRL_NOEXCEPT;
void rrl_deny_shown(const rrl_deny_entry_t *entry, rrl_call_limit_t *limit)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_DENY_CACHE_H */
