/*
 * The types of metrics counting (metrics_count.hpp): what a request counts
 * as in "redis_ratelimit_metrics", and the workers' gauges in shared
 * memory. The engine counts its calls' replies and nodes itself.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_metrics_count.h.
 */

#ifndef RRL_METRICS_COUNT_TYPES_H
#define RRL_METRICS_COUNT_TYPES_H

#include "base/rrl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A zone's counters in one array, as the shim keeps them: its requests (by
 * rrl_metrics_request_counter()), then from these offsets its override kinds
 * (rrl_metrics_override_counter()), its lease events and lease requests'
 * froms (RRL_LEASE_*, or RRL_LEASE_EVENTS + RRL_LEASE_FROM_*), its
 * settlements' results (RRL_SETTLE_*, rrl_settle.h).
 */
#define RRL_METRICS_ZONE_OVERRIDES  RRL_METRICS_STATUSES
#define RRL_METRICS_ZONE_LEASES                                               \
    (RRL_METRICS_ZONE_OVERRIDES + RRL_METRICS_OVERRIDE_KINDS)
#define RRL_METRICS_ZONE_SETTLE                                               \
    (RRL_METRICS_ZONE_LEASES + RRL_METRICS_LEASE_EVENTS + RRL_METRICS_LEASE_FROM)
#define RRL_METRICS_ZONE_COUNTERS                                             \
    (RRL_METRICS_ZONE_SETTLE + RRL_METRICS_SETTLE_RESULTS)

/* one worker's gauges, as it publishes them in shared memory */
typedef struct {
    uint64_t  parked;
    uint64_t  connections;
    uint64_t  circuits[RRL_METRICS_CIRCUIT_STATES];
} rrl_metrics_gauges_t;

#ifdef __cplusplus
}
#endif

#endif /* RRL_METRICS_COUNT_TYPES_H */
