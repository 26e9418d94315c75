// Metrics counting (rrl_metrics_*): which counter a request counts in,
// which error kind a reply counts as, round trips, and the gauges of nodes.
#include "metrics/metrics_count.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string_view>

#include "metrics/metrics.hpp"
#include "base/rrl_lease_types.h"
#include "api/rrl_metrics_count.h"

namespace {

TEST(MetricsCount, RequestsCountInTheirStatus) {
    EXPECT_EQ(rrl_metrics_request_counter(0, 0, 0, 0), -1);  // no status
    EXPECT_EQ(rrl_metrics_request_counter(1, 0, 1, 1), 0);
    EXPECT_EQ(rrl_metrics_request_counter(RRL_METRICS_STATUSES, 0, 0, 0),
              RRL_METRICS_STATUSES - 1);
    EXPECT_EQ(rrl_metrics_request_counter(RRL_METRICS_STATUSES + 1, 0, 0, 0),
              -1);
}

// where a lease limit's request was decided: from leases, or after Redis
// answered (a refusal then decided from leases too); not counted for the
// deny cache's answers and failures, nor for a zone without lease=
TEST(MetricsCount, LeaseRequestsFrom) {
    const int lease = RRL_LEASE_EVENTS + RRL_LEASE_FROM_LEASE;
    const int redis = RRL_LEASE_EVENTS + RRL_LEASE_FROM_REDIS;
    EXPECT_EQ(rrl_metrics_lease_counter(10, 1, 0), lease);
    EXPECT_EQ(rrl_metrics_lease_counter(10, 0, 1), redis);
    EXPECT_EQ(rrl_metrics_lease_counter(10, 1, 1), redis);
    EXPECT_EQ(rrl_metrics_lease_counter(10, 0, 0), -1);
    EXPECT_EQ(rrl_metrics_lease_counter(0, 1, 0), -1);
    EXPECT_EQ(rrl_metrics_lease_counter(0, 0, 1), -1);
}

TEST(MetricsCount, ARejectionCountsInTheZonesThatRejected) {
    EXPECT_EQ(rrl_metrics_request_counter(2, 1, 1, 1), -1);  // this passed
    EXPECT_EQ(rrl_metrics_request_counter(2, 1, 1, 0), 1);
    // not decided limit by limit (e.g. failed closed): every zone
    EXPECT_EQ(rrl_metrics_request_counter(2, 1, 0, 1), 1);
    // a pass counts everywhere
    EXPECT_EQ(rrl_metrics_request_counter(1, 0, 1, 0), 0);
}

int kind(int replied, int array, const char* error) {
    std::optional<std::string_view> text;
    if (error != nullptr) text = std::string_view(error);
    return rrl::metrics_reply_error(replied != 0, array != 0, text)
        .value_or(-1);
}

// a reply's round trip and its bucket, as the engine reports them: 0 when
// it counts in no bucket
int round_trip(int64_t sent_us, int64_t now_us, uint64_t* rtt_us,
               size_t* bucket) {
    auto rtt = rrl::metrics_rtt(sent_us, now_us);
    if (!rtt) return 0;
    *rtt_us = *rtt;
    *bucket = rrl::metrics_bucket(*rtt);
    return 1;
}

TEST(MetricsCount, RepliesAsErrorKinds) {
    EXPECT_EQ(kind(0, 0, nullptr), RRL_METRICS_ERR_CONNECTION);
    EXPECT_EQ(kind(1, 1, nullptr), -1);
    EXPECT_EQ(kind(1, 0, nullptr), RRL_METRICS_ERR_BAD_REPLY);
    EXPECT_EQ(kind(1, 0, "NOSCRIPT No matching script"),
              RRL_METRICS_ERR_NOSCRIPT);
    EXPECT_EQ(kind(1, 0, "MOVED 3999 127.0.0.1:6381"), RRL_METRICS_ERR_MOVED);
    EXPECT_EQ(kind(1, 0, "ASK 3999 127.0.0.1:6381"), RRL_METRICS_ERR_ASK);
    EXPECT_EQ(kind(1, 0, "READONLY You can't write"),
              RRL_METRICS_ERR_ERROR_REPLY);
    EXPECT_EQ(kind(1, 0, "ERR something"), RRL_METRICS_ERR_ERROR_REPLY);
    EXPECT_EQ(kind(1, 0, ""), RRL_METRICS_ERR_ERROR_REPLY);
}

TEST(MetricsCount, RoundTrips) {
    uint64_t rtt = 9;
    size_t bucket = 99;
    EXPECT_EQ(round_trip(0, 1000, &rtt, &bucket), 0);    // sent unknown
    EXPECT_EQ(round_trip(1000, 999, &rtt, &bucket), 0);  // clock back
    EXPECT_EQ(rtt, 9u);
    EXPECT_EQ(round_trip(1000, 1000, &rtt, &bucket), 1);
    EXPECT_EQ(rtt, 0u);
    EXPECT_EQ(bucket, 0u);
    EXPECT_EQ(round_trip(1000, 1000 + 2000000, &rtt, &bucket), 1);
    EXPECT_EQ(rtt, 2000000u);
    EXPECT_EQ(bucket, static_cast<size_t>(RRL_METRICS_BUCKETS - 1));
}

TEST(MetricsCount, GaugesOfNodes) {
    rrl_metrics_t m;
    std::memset(&m, 0, sizeof(m));
    rrl::metrics_gauge_node(&m, true, rrl::BreakerState::closed);
    rrl::metrics_gauge_node(&m, false, rrl::BreakerState::open);
    rrl::metrics_gauge_node(&m, true, rrl::BreakerState::half_open);
    rrl::metrics_gauge_node(&m, false, rrl::BreakerState::open);
    EXPECT_EQ(m.connections, 2u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_CLOSED], 1u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_HALF_OPEN], 1u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_OPEN], 2u);
}

// One array of a zone's counters, as the shim keeps them, into its parts.
TEST(MetricsCount, AZonesCountersInOneArray) {
    uint64_t counters[RRL_METRICS_ZONE_COUNTERS];
    for (size_t i = 0; i < RRL_METRICS_ZONE_COUNTERS; i++) counters[i] = i + 1;
    rrl_metrics_zone_t z;
    std::memset(&z, 0, sizeof(z));
    z.overrides = 1;
    rrl_metrics_zone_counts(&z, counters);
    uint64_t n = 1;
    for (uint64_t v : z.requests) EXPECT_EQ(v, n++);
    EXPECT_EQ(n, uint64_t{RRL_METRICS_ZONE_OVERRIDES} + 1);
    for (uint64_t v : z.override_kinds) EXPECT_EQ(v, n++);
    EXPECT_EQ(n, uint64_t{RRL_METRICS_ZONE_LEASES} + 1);
    for (uint64_t v : z.lease_events) EXPECT_EQ(v, n++);
    EXPECT_EQ(n, uint64_t{RRL_METRICS_ZONE_LEASES} + RRL_LEASE_EVENTS + 1);
    for (uint64_t v : z.lease_from) EXPECT_EQ(v, n++);
    EXPECT_EQ(n, uint64_t{RRL_METRICS_ZONE_SETTLE} + 1);
    for (uint64_t v : z.settle_results) EXPECT_EQ(v, n++);
    EXPECT_EQ(n, uint64_t{RRL_METRICS_ZONE_COUNTERS} + 1);
    EXPECT_EQ(RRL_METRICS_ZONE_COUNTERS, RRL_METRICS_ZONE_SETTLE + 2);
    EXPECT_EQ(z.overrides, 1);  // not a counter
    EXPECT_EQ(z.name, nullptr);
}

TEST(MetricsCount, GaugesSavedAndAddedUp) {
    rrl_metrics_t m;
    rrl_metrics_gauges_t g[3];
    std::memset(&m, 0, sizeof(m));
    std::memset(g, 0, sizeof(g));
    m.parked = 4;
    m.connections = 2;
    m.circuits[RRL_METRICS_CIRCUIT_CLOSED] = 1;
    m.circuits[RRL_METRICS_CIRCUIT_OPEN] = 3;
    m.errors[0] = 7;  // not a gauge
    rrl_metrics_gauges_save(&m, &g[0]);
    EXPECT_EQ(g[0].parked, 4u);
    EXPECT_EQ(g[0].connections, 2u);
    EXPECT_EQ(g[0].circuits[RRL_METRICS_CIRCUIT_CLOSED], 1u);
    EXPECT_EQ(g[0].circuits[RRL_METRICS_CIRCUIT_HALF_OPEN], 0u);
    EXPECT_EQ(g[0].circuits[RRL_METRICS_CIRCUIT_OPEN], 3u);

    g[2] = g[0];  // g[1]: a slot no worker uses
    g[2].parked = 1;
    rrl_metrics_gauges_add(&m, g, 3);
    EXPECT_EQ(m.parked, 9u);
    EXPECT_EQ(m.connections, 6u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_CLOSED], 3u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_HALF_OPEN], 0u);
    EXPECT_EQ(m.circuits[RRL_METRICS_CIRCUIT_OPEN], 9u);
    EXPECT_EQ(m.errors[0], 7u);
}

}  // namespace
