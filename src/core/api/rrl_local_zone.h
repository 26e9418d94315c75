/*
 * A key's entry in a local zone ("redis_ratelimit_fail local"): its state
 * and how long it matters, decided with local_check() (local_algorithms.hpp) on the
 * share of a zone this server allows alone (local_share=1/K).
 */

#ifndef RRL_LOCAL_ZONE_H
#define RRL_LOCAL_ZONE_H

#include "base/rrl_local_zone_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"

#ifdef __cplusplus
extern "C" {
#endif


/*
 * The local limit of a request's limit: its zone's rate and algorithm from
 * zone_limit (the zone's part, rrl_zone_call_limit()'s: no override), the
 * request's cost, no entry yet.
 */
rrl_local_limit_t rrl_local_limit(const rrl_call_limit_t *zone_limit,
    uint64_t cost) RRL_NOEXCEPT;

/*
 * Decides a request of n limits at now_us, each with the zone's share, on
 * its key's entry (one that has ended counts as none), all or nothing:
 * values is the reply the script would send (passed when every limit
 * passes, now_us, then each limit's part), next[i] what limit i's key
 * keeps if it passed, which matters until the limit's reset; nothing is
 * kept otherwise. Returns the number of values, 0 on failure (a limit
 * local_check() (local_algorithms.hpp) refuses).
 */
size_t rrl_local_zone_decide(const rrl_local_limit_t *limits, size_t n,
    uint64_t share, int64_t now_us, rrl_local_entry_t *next,
    int64_t *values) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_LOCAL_ZONE_H */
