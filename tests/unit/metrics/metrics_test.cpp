// The Prometheus exposition of "redis_ratelimit_metrics": label escaping,
// bucket choice, cumulative histogram buckets, sum and count.
#include "metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <string>

#include "api/rrl.h"
#include "api/rrl_settle.h"

namespace {

std::string format(const rrl_metrics_t& m) {
    size_t len = rrl_metrics_format(&m, nullptr, 0);
    std::string out(len, '\0');
    EXPECT_EQ(rrl_metrics_format(&m, out.data(), out.size()), len);
    return out;
}

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, EscapesLabelValues) {
    EXPECT_EQ(rrl::escape_label_value("per_ip"), "per_ip");
    EXPECT_EQ(rrl::escape_label_value("a\"b"), "a\\\"b");
    EXPECT_EQ(rrl::escape_label_value("a\\b"), "a\\\\b");
    EXPECT_EQ(rrl::escape_label_value("a\nb"), "a\\nb");
    EXPECT_EQ(rrl::escape_label_value("\\\"\n"), "\\\\\\\"\\n");
}

TEST(Metrics, BucketIsTheFirstBoundAtLeastTheValue) {
    EXPECT_EQ(rrl::metrics_bucket(0), 0u);
    EXPECT_EQ(rrl::metrics_bucket(500), 0u);  // le="0.0005" holds 0.0005
    EXPECT_EQ(rrl::metrics_bucket(501), 1u);
    EXPECT_EQ(rrl::metrics_bucket(1000), 1u);
    EXPECT_EQ(rrl::metrics_bucket(1000000), 10u);  // le="1"
    EXPECT_EQ(rrl::metrics_bucket(1000001), 11u);  // +Inf
    EXPECT_EQ(rrl::metrics_bucket(UINT64_MAX), 11u);
}

TEST(Metrics, RequestsPerZoneAndStatus) {
    rrl_metrics_zone_t zones[2] = {};
    zones[0].name = "per_ip";
    zones[0].len = 6;
    zones[0].requests[0] = 10;  // passed
    zones[0].requests[1] = 3;   // rejected
    zones[0].requests[5] = 7;   // failed_local
    zones[0].requests[6] = 4;   // delayed
    zones[0].requests[7] = 1;   // delayed_dry_run
    zones[1].name = "we\"ird\\";
    zones[1].len = 7;
    zones[1].requests[2] = 2;  // rejected_dry_run

    rrl_metrics_t m{};
    m.zones = zones;
    m.nzones = 2;
    std::string text = format(m);

    EXPECT_TRUE(
        has_line(text, "# TYPE redis_ratelimit_requests_total counter"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"passed\"} 10"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"rejected\"} 3"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"rejected_dry_run\"} 0"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"failed_open\"} 0"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"failed_closed\"} 0"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"failed_local\"} 7"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"delayed\"} 4"));
    EXPECT_TRUE(has_line(text,
                         "redis_ratelimit_requests_total{zone=\"per_ip\","
                         "status=\"delayed_dry_run\"} 1"));
    EXPECT_TRUE(
        has_line(text,
                 "redis_ratelimit_requests_total{zone=\"we\\\"ird\\\\\","
                 "status=\"rejected_dry_run\"} 2"));
    // one TYPE line a family
    EXPECT_EQ(text.find("# TYPE redis_ratelimit_requests_total"),
              text.rfind("# TYPE redis_ratelimit_requests_total"));
}

TEST(Metrics, HistogramBucketsAreCumulative) {
    rrl_metrics_t m{};
    m.rtt_buckets[0] = 4;   // <= 0.5 ms
    m.rtt_buckets[2] = 1;   // <= 2.5 ms
    m.rtt_buckets[11] = 2;  // > 1 s
    m.rtt_sum_us = 2004001;
    std::string text = format(m);

    EXPECT_TRUE(
        has_line(text, "# TYPE redis_ratelimit_redis_rtt_seconds histogram"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_rtt_seconds_bucket{le=\"0.0005\"} 4"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_rtt_seconds_bucket{le=\"0.001\"} 4"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_rtt_seconds_bucket{le=\"0.0025\"} 5"));
    EXPECT_TRUE(
        has_line(text, "redis_ratelimit_redis_rtt_seconds_bucket{le=\"1\"} 5"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_rtt_seconds_bucket{le=\"+Inf\"} 7"));
    EXPECT_TRUE(
        has_line(text, "redis_ratelimit_redis_rtt_seconds_sum 2.004001"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_redis_rtt_seconds_count 7"));
}

TEST(Metrics, ErrorsAndGauges) {
    rrl_metrics_t m{};
    m.errors[RRL_METRICS_ERR_TIMEOUT] = 3;
    m.errors[RRL_METRICS_ERR_NOSCRIPT] = 1;
    m.errors[RRL_METRICS_ERR_MAX_PARKED] = 9;
    m.parked = 5;
    m.connections = 2;
    m.circuits[RRL_METRICS_CIRCUIT_CLOSED] = 1;
    m.circuits[RRL_METRICS_CIRCUIT_OPEN] = 1;
    std::string text = format(m);

    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_errors_total{kind=\"timeout\"} 3"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_errors_total{kind=\"noscript\"} 1"));
    EXPECT_TRUE(has_line(
        text, "redis_ratelimit_redis_errors_total{kind=\"max_parked\"} 9"));
    EXPECT_TRUE(
        has_line(text, "redis_ratelimit_redis_errors_total{kind=\"moved\"} 0"));
    EXPECT_TRUE(
        has_line(text, "redis_ratelimit_redis_rtt_seconds_sum 0.000000"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_redis_rtt_seconds_count 0"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_parked_requests 5"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_connections 2"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_circuits{state=\"closed\"} 1"));
    EXPECT_TRUE(
        has_line(text, "redis_ratelimit_circuits{state=\"half_open\"} 0"));
    EXPECT_TRUE(has_line(text, "redis_ratelimit_circuits{state=\"open\"} 1"));
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
}

TEST(Metrics, TruncatesToTheBufferAndTellsTheLength) {
    rrl_metrics_t m{};
    size_t len = rrl_metrics_format(&m, nullptr, 0);
    char small[16];
    EXPECT_EQ(rrl_metrics_format(&m, small, sizeof(small)), len);
    EXPECT_EQ(std::string(small, sizeof(small)), "# HELP redis_rat");
}

}  // namespace

namespace {

// The lease families: only zones with lease=, HELP and TYPE once, the zone
// label escaped as everywhere; none of it without a lease zone.
TEST(Metrics, LeasesOfTheLeaseZonesOnly) {
    rrl_metrics_zone_t zones[3] = {};
    zones[0].name = "plain";
    zones[0].len = 5;
    zones[1].name = "le\"ase";
    zones[1].len = 6;
    zones[1].lease = 1;
    zones[1].lease_events[0] = 7;  // taken
    zones[1].lease_events[1] = 5;  // renewed
    zones[1].lease_events[2] = 2;  // given_back
    zones[1].lease_events[3] = 1;  // refused
    zones[1].lease_from[0] = 900;  // lease
    zones[1].lease_from[1] = 12;   // redis
    zones[2].name = "b";
    zones[2].len = 1;
    zones[2].lease = 1;

    rrl_metrics_t m{};
    m.zones = zones;
    m.nzones = 3;
    std::string text = format(m);

    for (
        const char* line :
        {"# TYPE redis_ratelimit_leases_total counter",
         "# TYPE redis_ratelimit_lease_requests_total counter",
         "redis_ratelimit_leases_total{zone=\"le\\\"ase\",event=\"taken\"} 7",
         "redis_ratelimit_leases_total{zone=\"le\\\"ase\",event=\"renewed\"} 5",
         "redis_ratelimit_leases_total{zone=\"le\\\"ase\",event=\"given_back\"}"
         " 2",
         "redis_ratelimit_leases_total{zone=\"le\\\"ase\",event=\"refused\"} 1",
         "redis_ratelimit_leases_total{zone=\"b\",event=\"refused\"} 0",
         "redis_ratelimit_lease_requests_total{zone=\"le\\\"ase\",from="
         "\"lease\"} 900",
         "redis_ratelimit_lease_requests_total{zone=\"le\\\"ase\",from="
         "\"redis\"} 12",
         "redis_ratelimit_lease_requests_total{zone=\"b\",from=\"redis\"} 0"}) {
        EXPECT_TRUE(has_line(text, line)) << line;
    }
    EXPECT_EQ(text.find("{zone=\"plain\",event="), std::string::npos);
    EXPECT_EQ(text.find("{zone=\"plain\",from="), std::string::npos);
    // one HELP a family, before its lines
    size_t help = text.find("# HELP redis_ratelimit_leases_total ");
    ASSERT_NE(help, std::string::npos);
    EXPECT_EQ(text.find("# HELP redis_ratelimit_leases_total ", help + 1),
              std::string::npos);
    EXPECT_LT(help, text.find("redis_ratelimit_leases_total{"));
    EXPECT_LT(text.find("# HELP redis_ratelimit_lease_requests_total "),
              text.find("redis_ratelimit_lease_requests_total{"));

    // without a lease zone the text is as before
    zones[1].lease = 0;
    zones[2].lease = 0;
    std::string none = format(m);
    EXPECT_EQ(none.find("lease"), std::string::npos);
    EXPECT_EQ(none.find("le\\\"ase\",event"), std::string::npos);
}

// The settlements' family: only zones with a settle= limit, HELP once,
// the results by RRL_SETTLE_*; none of it without such a zone.
TEST(Metrics, SettlementsOfTheSettleZonesOnly) {
    rrl_metrics_zone_t zones[3] = {};
    zones[0].name = "plain";
    zones[0].len = 5;
    zones[1].name = "tok\"ens";
    zones[1].len = 7;
    zones[1].settle = 1;
    zones[1].settle_results[RRL_SETTLE_SETTLED] = 40;
    zones[1].settle_results[RRL_SETTLE_FAILED] = 3;
    zones[2].name = "b";
    zones[2].len = 1;
    zones[2].settle = 1;

    rrl_metrics_t m{};
    m.zones = zones;
    m.nzones = 3;
    std::string text = format(m);

    for (const char* line :
         {"# HELP redis_ratelimit_settlements_total Settlements (settle=) of "
          "the zone's limits, by result: settled (refunded, charged, or "
          "nothing to settle), settle_failed (no number in the value, or "
          "Redis failed: the estimate stays charged).",
          "# TYPE redis_ratelimit_settlements_total counter",
          "redis_ratelimit_settlements_total{zone=\"tok\\\"ens\",result="
          "\"settled\"} 40",
          "redis_ratelimit_settlements_total{zone=\"tok\\\"ens\",result="
          "\"settle_failed\"} 3",
          "redis_ratelimit_settlements_total{zone=\"b\",result=\"settled\"} 0",
          "redis_ratelimit_settlements_total{zone=\"b\",result="
          "\"settle_failed\"} 0"}) {
        EXPECT_TRUE(has_line(text, line)) << line;
    }
    EXPECT_EQ(text.find("{zone=\"plain\",result="), std::string::npos);
    size_t help = text.find("# HELP redis_ratelimit_settlements_total ");
    EXPECT_EQ(text.find("# HELP redis_ratelimit_settlements_total ", help + 1),
              std::string::npos);
    EXPECT_LT(help, text.find("redis_ratelimit_settlements_total{"));

    zones[1].settle = 0;
    zones[2].settle = 0;
    EXPECT_EQ(format(m).find("settle"), std::string::npos);
}

}  // namespace
