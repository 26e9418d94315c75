/*
 * A key's entry in a local zone ("redis_ratelimit_fail local"): its state
 * and how long it matters, decided with local_check() (local.hpp) on the
 * share of a zone this server allows alone (local_share=1/K).
 */

#ifndef RRL_LOCAL_ZONE_H
#define RRL_LOCAL_ZONE_H

#include "rrl.h"
#include "rrl_call_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a local zone keeps for a key: all zero when there is none. */
typedef struct {
    int64_t            end_us;  /* the state no longer matters from then */
    rrl_local_state_t  state;
} rrl_local_entry_t;

/* A limit of a request (burst: effective_burst()'s) and its key's entry */
typedef struct {
    int                       algorithm;
    uint64_t                  limit;
    uint64_t                  period_ms;
    uint64_t                  burst;
    uint64_t                  cost;
    const rrl_local_entry_t  *entry;   /* NULL: none */
} rrl_local_limit_t;

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
 * local_check() (local.hpp) refuses).
 */
size_t rrl_local_zone_decide(const rrl_local_limit_t *limits, size_t n,
    uint64_t share, int64_t now_us, rrl_local_entry_t *next,
    int64_t *values) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_LOCAL_ZONE_H */
