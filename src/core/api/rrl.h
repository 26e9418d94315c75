/*
 * The C API of the rate limiter core: its common codes, the log callback,
 * and the rules the nginx shim calls that belong to no subsystem's header
 * (rrl_conf.h, rrl_engine.h, rrl_lease_call.h, ... include this one). Every
 * function is noexcept: failures come back as return codes and, where
 * useful, a message through the log callback.
 */

#ifndef RRL_H
#define RRL_H

#include "base/rrl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

void rrl_set_logger(rrl_log_pt handler, void *data) RRL_NOEXCEPT;

/* Longest key rrl_key_build() writes for a zone name of zone_len bytes. */
size_t rrl_key_max_len(size_t zone_len) RRL_NOEXCEPT;

size_t rrl_key_build(char *buf, const char *zone, size_t zone_len,
    int algorithm, const unsigned char *key, size_t key_len) RRL_NOEXCEPT;

/* The SHA-1 of the Lua script run by EVALSHA (script.hpp), 40 hex digits. */
const char *rrl_script_sha1(void) RRL_NOEXCEPT;

/*
 * A rejection of one limit (result->passed == 0), from a call sent at
 * sent_us, learned at now_us: 1 and *entry when it is worth keeping (it
 * ends after now_us), 0 otherwise (a pass, a cost over the zone's
 * capacity, an end already past). Redis decided between the two: the
 * entry rejects until its earliest end and announces waits to its latest.
 */
int rrl_deny_learn(int64_t sent_us, int64_t now_us,
    const rrl_deny_limit_t *limit, const rrl_limit_result_t *result,
    rrl_deny_entry_t *entry) RRL_NOEXCEPT;

/*
 * Writes the exposition of *m into buf, at most size bytes (buf may be
 * NULL when size is 0); returns its whole length, as snprintf does, or 0
 * on failure.
 */
size_t rrl_metrics_format(const rrl_metrics_t *m, char *buf, size_t size)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_H */
