// Metrics counting's extern "C" functions (rrl_metrics_count.h); none can
// throw.
#include <algorithm>

#include "metrics/metrics_count.hpp"
#include "api/rrl_metrics_count.h"

int rrl_metrics_request_counter(unsigned status, int rejected, int decided,
                                int passed) noexcept {
    auto counter = rrl::metrics_request_counter(status, rejected != 0,
                                                decided != 0, passed != 0);
    return counter ? static_cast<int>(*counter) : -1;
}

int rrl_metrics_override_counter(int override, int replied) noexcept {
    auto counter = rrl::metrics_override_counter(override, replied != 0);
    return counter ? static_cast<int>(*counter) : -1;
}

int rrl_metrics_lease_counter(unsigned lease, int leased,
                              int replied) noexcept {
    auto counter =
        rrl::metrics_lease_counter(lease != 0, leased != 0, replied != 0);
    return counter ? static_cast<int>(*counter) : -1;
}

void rrl_metrics_zone_counts(rrl_metrics_zone_t* z,
                             const uint64_t* counters) noexcept {
    std::copy_n(counters, RRL_METRICS_STATUSES, z->requests);
    std::copy_n(counters + RRL_METRICS_ZONE_OVERRIDES,
                RRL_METRICS_OVERRIDE_KINDS, z->override_kinds);
    std::copy_n(counters + RRL_METRICS_ZONE_LEASES, RRL_METRICS_LEASE_EVENTS,
                z->lease_events);
    std::copy_n(counters + RRL_METRICS_ZONE_LEASES + RRL_METRICS_LEASE_EVENTS,
                RRL_METRICS_LEASE_FROM, z->lease_from);
    std::copy_n(counters + RRL_METRICS_ZONE_SETTLE, RRL_METRICS_SETTLE_RESULTS,
                z->settle_results);
}

void rrl_metrics_gauges_save(const rrl_metrics_t* m,
                             rrl_metrics_gauges_t* g) noexcept {
    rrl::metrics_gauges_save(*m, g);
}

void rrl_metrics_gauges_add(rrl_metrics_t* m, const rrl_metrics_gauges_t* g,
                            size_t n) noexcept {
    rrl::metrics_gauges_add(m, g, n);
}
