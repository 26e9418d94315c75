/*
 * A request's limits (see script/call_args.hpp): each one made from its
 * zone's, and the script's reply to their call decoded.
 */

#ifndef RRL_CALL_ARGS_H
#define RRL_CALL_ARGS_H

#include "base/rrl_call_args_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A request's limit: its zone's (zone, as configured), with the cost (the
 * evaluated cost=$VAR's text as rrl::request_cost() reads it; NULL: cost),
 * the key and delay given; the rest as the zone's. Its Redis key is
 * written into redis_key (rrl_key_max_len(zone->zone_len) bytes), the
 * key the call, the deny cache, the lease table and the local zone use.
 */
void rrl_call_limit(rrl_call_limit_t *limit, const rrl_call_limit_t *zone,
    uint64_t cost, const unsigned char *cost_text, size_t cost_len,
    const unsigned char *key, size_t key_len, uint64_t delay,
    char *redis_key) RRL_NOEXCEPT;

/* the integers of the script's reply to a check of these limits */
size_t rrl_reply_values(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;

/*
 * Decodes the call's reply as rrl_reply_decode() does, and refuses (logged,
 * RRL_ERROR) one where a limit has more remaining than its zone can ever
 * hold: no reply of the script's. A reply of rrl_reply_values() integers
 * sets each limit's override, and the limit, period and burst of an
 * applied one (block: limit 0) in limits; one of 4 per limit (the deny
 * cache's, the local zone's) leaves them as they are. An unlimited limit
 * is never the reported one. Each limit's lease_granted and lease_ttl_us
 * are set: a lease limit's from a reply of rrl_reply_values() integers
 * when the request passed, else 0 (on RRL_ERROR too); such a reply is
 * refused when a grant is more than W (max(lease_want, cost, 1)), less
 * than max(cost, 1) on a pass, not 0 on a rejected limit, or a lifetime is
 * negative or over the state's bound (RRL_MAX_STATE_MS).
 */
int rrl_call_reply_decode(const int64_t *values, size_t nvalues,
    rrl_call_limit_t *limits, size_t n, rrl_limit_result_t *results,
    rrl_decision_t *decision) RRL_NOEXCEPT;

/*
 * How long a request waits in nginx (delay=D, see delay.hpp), in us: 0
 * unless it passed, else the longest of its leaky_bucket limits' waits.
 * share: K of local_share=1/K when the local zone decided, else 1.
 */
int64_t rrl_call_delay(const rrl_call_limit_t *limits,
    const rrl_limit_result_t *results, size_t n, int passed, uint64_t share)
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

/*
 * The log line of the first invalid override (RRL_OVERRIDE_INVALID, once
 * decoded) of n limits, as rrl::capi::put() writes it (the key escaped);
 * its length, 0: none invalid, or an error.
 */
size_t rrl_override_message(char *buf, size_t size,
    const rrl_call_limit_t *limits, size_t n) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CALL_ARGS_H */
