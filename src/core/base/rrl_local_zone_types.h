/*
 * A key's entry in a local zone ("redis_ratelimit_fail local"): its state
 * and how long it matters, decided with local_check() (local_algorithms.hpp) on the
 * share of a zone this server allows alone (local_share=1/K).
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_local_zone.h.
 */

#ifndef RRL_LOCAL_ZONE_TYPES_H
#define RRL_LOCAL_ZONE_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

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

#ifdef __cplusplus
}
#endif

#endif /* RRL_LOCAL_ZONE_TYPES_H */
