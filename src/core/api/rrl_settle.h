/*
 * The C API of settlement (settle=VALUE of "redis_ratelimit"): after a
 * request, its actual cost A against the estimate E charged up front. The
 * rules are lease/settle.hpp's, settling in a lease lease/lease_call.hpp's
 * (each function here is its C++ namesake's, guarded).
 */

#ifndef RRL_SETTLE_H
#define RRL_SETTLE_H

#include "base/rrl_settle_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"
#include "api/rrl_decision.h"
#include "api/rrl_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rrl::settle_why(): NUL-terminated, "" when text is a settle=VALUE */
const char *rrl_settle_why(const unsigned char *text, size_t len)
    RRL_NOEXCEPT;

/* rrl::settle_plan(): an RRL_SETTLE_*, *out set for RRL_SETTLE_SEND */
int rrl_settle_plan(unsigned status, int leased, int64_t redis_now_us,
    const rrl_call_limit_t *zone, const rrl_call_limit_t *charged,
    const unsigned char *text, size_t len, rrl_call_limit_t *out)
    RRL_NOEXCEPT;

/*
 * rrl::Settlement::start(): RRL_OK, made; RRL_ERROR, not made (settled()
 * has run then). limits are copied, keys included.
 */
int rrl_settle(rrl_engine_t *engine, const char *sha, size_t sha_len,
    const rrl_call_limit_t *limits, const void *const *zones, size_t n,
    int64_t sent_us, rrl_settled_pt settled, void *arg) RRL_NOEXCEPT;

/* rrl::lease_call_settle(): 1 settled in the entry, 0: the rest to Redis */
int rrl_lease_settle(rrl_lease_entry_t *entry, rrl_call_limit_t *limit,
    int64_t now_us) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_SETTLE_H */
