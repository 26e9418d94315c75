/*
 * The handler's rules (see decision.hpp): what a request's outcome means
 * for its status, response, the deny cache, the log, headers and metrics.
 */

#ifndef RRL_DECISION_H
#define RRL_DECISION_H

#include "base/rrl_decision_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * passed: the decoded decision's (reply, cached, local); delay_us: its
 * wait, rrl_request_delay()'s. RRL_ERROR on an unknown outcome or fail mode.
 */
int rrl_decide(const rrl_settings_t *settings, int outcome, int passed,
    int64_t delay_us, rrl_verdict_t *verdict) RRL_NOEXCEPT;

/*
 * The log line of a rejection by limit, as rrl::capi::put() writes it: its
 * rate the zone's as written (zone_rate), or an applied override's
 * ("2r/10s (override)", "block (override)"); its length, 0 on failure.
 */
size_t rrl_rejection_message(char *buf, size_t size, int dry_run, int outcome,
    const rrl_call_limit_t *limit, const char *zone_rate,
    size_t zone_rate_len, int64_t retry_after) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_DECISION_H */
