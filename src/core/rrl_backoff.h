/*
 * Reconnecting to a Redis (see backoff.hpp): the delay before each attempt,
 * doubled from RRL_BACKOFF_MIN_MS up to RRL_BACKOFF_MAX_MS, with jitter.
 */

#ifndef RRL_BACKOFF_H
#define RRL_BACKOFF_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRL_BACKOFF_MIN_MS  50
#define RRL_BACKOFF_MAX_MS  500

/*
 * The attempt after a failure: *backoff_ms (0: none since the connection
 * last worked) becomes the next backoff; returns the delay to wait in ms,
 * that backoff +-25% from random (any value, e.g. random()).
 */
uint64_t rrl_backoff_next(uint64_t *backoff_ms, uint64_t random) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_BACKOFF_H */
