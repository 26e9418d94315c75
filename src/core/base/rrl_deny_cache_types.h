/*
 * How the nginx shim uses the deny cache ("redis_ratelimit_deny_cache"):
 * for which limits, for which Redis, and what it answers for a limit of a
 * request from the key's entry. The arithmetic of an entry is rrl.h's
 * rrl_deny_learn() and deny_applies() (deny_entry.hpp).
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_deny_cache.h.
 */

#ifndef RRL_DENY_CACHE_TYPES_H
#define RRL_DENY_CACHE_TYPES_H

#include "base/rrl_types.h"
#include "base/rrl_engine_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRL_DENY_MISS      0  /* ask Redis */
#define RRL_DENY_REJECTED  1  /* rejected without Redis */
#define RRL_DENY_ENDED     2  /* ask Redis, and drop the entry: it is over */

#ifdef __cplusplus
}
#endif

#endif /* RRL_DENY_CACHE_TYPES_H */
