/*
 * The C API of metrics counting (metrics_count.hpp): what a request counts
 * as in "redis_ratelimit_metrics", and the workers' gauges in shared
 * memory. The engine counts its calls' replies and nodes itself.
 */

#ifndef RRL_METRICS_COUNT_H
#define RRL_METRICS_COUNT_H

#include "base/rrl_metrics_count_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The counter (index of rrl_metrics_zone_t's requests) a zone counts a
 * request in, -1: none. status: $redis_ratelimit_status's number (0: none
 * yet); rejected: the status is a rejection (dry run or not); decided: each
 * limit has its own result; passed: this zone's limit passed. A rejection
 * counts in the zones that rejected it.
 */
int rrl_metrics_request_counter(unsigned status, int rejected, int decided,
    int passed) RRL_NOEXCEPT;

/*
 * The counter (index of rrl_metrics_zone_t's override_kinds) a zone counts
 * a request's override in (RRL_OVERRIDE_*), -1: none. replied: Redis
 * answered the request (a deny cache's answer found no override).
 */
int rrl_metrics_override_counter(int override, int replied) RRL_NOEXCEPT;

/*
 * The counter (in a zone's lease family, RRL_METRICS_ZONE_LEASES) a lease
 * limit (lease: P of lease=P%, 0: none) of a decided request counts in, -1:
 * none: RRL_LEASE_EVENTS + RRL_LEASE_FROM_LEASE when decided from leases
 * (leased) without Redis, + RRL_LEASE_FROM_REDIS when Redis answered
 * (replied; a refusal then decided from leases included); neither (the deny
 * cache's answer, a failure): none.
 */
int rrl_metrics_lease_counter(unsigned lease, int leased, int replied)
    RRL_NOEXCEPT;

/*
 * such an array of counters into z's requests, override kinds, leases and
 * settlements
 */
void rrl_metrics_zone_counts(rrl_metrics_zone_t *z, const uint64_t *counters)
    RRL_NOEXCEPT;

/* the gauges of *m, into *g */
void rrl_metrics_gauges_save(const rrl_metrics_t *m, rrl_metrics_gauges_t *g)
    RRL_NOEXCEPT;

/* adds the gauges of n workers to *m's */
void rrl_metrics_gauges_add(rrl_metrics_t *m, const rrl_metrics_gauges_t *g,
    size_t n) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_METRICS_COUNT_H */
