// Metrics counting's extern "C" functions (rrl_metrics_count.h); none can
// throw.
#include <algorithm>

#include "metrics_count.hpp"
#include "rrl_metrics_count.h"

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

int rrl_metrics_reply_error(int replied, int array, const char* error,
                            size_t len) noexcept {
    std::optional<std::string_view> text;
    if (error != nullptr) text = std::string_view(error, len);
    return rrl::metrics_reply_error(replied != 0, array != 0, text)
        .value_or(-1);
}

int rrl_metrics_rtt(int64_t sent_us, int64_t now_us, uint64_t* rtt_us,
                    size_t* bucket) noexcept {
    auto rtt = rrl::metrics_rtt(sent_us, now_us);
    if (!rtt) return 0;
    *rtt_us = *rtt;
    *bucket = rrl_metrics_bucket(*rtt);
    return 1;
}

void rrl_metrics_gauge_node(rrl_metrics_t* m, int connected,
                            int breaker_state) noexcept {
    rrl::metrics_gauge_node(m, connected != 0, breaker_state);
}

void rrl_metrics_gauges_save(const rrl_metrics_t* m,
                             rrl_metrics_gauges_t* g) noexcept {
    rrl::metrics_gauges_save(*m, g);
}

void rrl_metrics_gauges_add(rrl_metrics_t* m, const rrl_metrics_gauges_t* g,
                            size_t n) noexcept {
    rrl::metrics_gauges_add(m, g, n);
}
