/*
 * The C API of a request (decide/request.hpp): one opaque handle, made in
 * the caller's memory, that holds the request's limits, the reply to its
 * call, each limit's result and the decision. The engine's call
 * (rrl_engine.h), the leases (rrl_lease_call.h) and what the request shows
 * (rrl_shown.h) take it; the rules are rrl::Request's.
 */

#ifndef RRL_REQUEST_H
#define RRL_REQUEST_H

#include "base/rrl_call_args_types.h"
#include "base/rrl_engine_types.h"
#include "base/rrl_lease_types.h"
#include "base/rrl_shown_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrl_request_s  rrl_request_t;

/* the bytes of a request of up to capacity limits */
size_t rrl_request_size(size_t capacity) RRL_NOEXCEPT;
/* a request made in memory (rrl_request_size() bytes, 8-byte aligned) */
rrl_request_t *rrl_request_make(void *memory, size_t capacity) RRL_NOEXCEPT;

/*
 * Adds a limit, rrl::call_limit()'s: its zone's (zone, whose identity is
 * id: a batch sends each zone's arguments once), with the cost
 * (cost_text, the evaluated cost=$VAR; NULL: cost), key and delay; its
 * Redis key is written into redis_key (rrl_key_max_len(zone->zone_len)
 * bytes). RRL_ERROR when the request is full.
 */
int rrl_request_add(rrl_request_t *request, const void *id,
    const rrl_call_limit_t *zone,
    uint64_t cost, const unsigned char *cost_text, size_t cost_len,
    const unsigned char *key, size_t key_len, uint64_t delay,
    char *redis_key) RRL_NOEXCEPT;

/* its limit i, its result and the decision (valid once decided) */
rrl_call_limit_t *rrl_request_limit(rrl_request_t *request, size_t i)
    RRL_NOEXCEPT;
rrl_limit_result_t *rrl_request_result(rrl_request_t *request, size_t i)
    RRL_NOEXCEPT;
const rrl_decision_t *rrl_request_decision(const rrl_request_t *request)
    RRL_NOEXCEPT;
/* where its call's reply goes, or the local zone's answer */
rrl_engine_result_t *rrl_request_reply(rrl_request_t *request) RRL_NOEXCEPT;
/* Redis's time in the reply, us; 0 before one */
int64_t rrl_request_redis_now(const rrl_request_t *request) RRL_NOEXCEPT;
/* a lease limit among its limits: 1, else 0 */
int rrl_request_has_lease(const rrl_request_t *request) RRL_NOEXCEPT;
/* for rrl_lease_call_check(): limit i's lease entry (NULL: none) */
void rrl_request_lease_entry(rrl_request_t *request, size_t i,
    rrl_lease_entry_t *entry) RRL_NOEXCEPT;
/* after it: the units limit i's renewal asks for, 0: none */
uint64_t rrl_request_renewal(const rrl_request_t *request, size_t i)
    RRL_NOEXCEPT;

/* its limits, results and decision, for what it shows (rrl_shown.h) */
void rrl_request_show(const rrl_request_t *request, rrl_shown_t *shown)
    RRL_NOEXCEPT;

/* Redis's reply, decoded (Request::decode()): RRL_OK, or RRL_ERROR, logged */
int rrl_request_decode(rrl_request_t *request) RRL_NOEXCEPT;
/* the local zone's answer, decoded: RRL_OK, or RRL_ERROR, logged */
int rrl_request_decode_local(rrl_request_t *request) RRL_NOEXCEPT;
/* the decision on the results as they are, at now_us (the deny cache's) */
void rrl_request_decide_at(rrl_request_t *request, int64_t now_us)
    RRL_NOEXCEPT;
/* the wait of delay=D, us: share is K of local_share=1/K, else 1 */
int64_t rrl_request_delay(const rrl_request_t *request, uint64_t share)
    RRL_NOEXCEPT;
/*
 * The log line of the first invalid override, once decoded, as
 * rrl::capi::put() writes it; its length, 0: none.
 */
size_t rrl_request_override_message(const rrl_request_t *request, char *buf,
    size_t size) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_REQUEST_H */
