#include "metrics/metrics.hpp"

#include <array>
#include <cinttypes>
#include <cstdio>

namespace rrl {

namespace {

// upper bounds in microseconds, and as written in le="..."
constexpr std::array<std::uint64_t, RRL_METRICS_BUCKETS - 1> kBoundsUs = {
    500,   1000,   2500,   5000,   10000,  25000,
    50000, 100000, 250000, 500000, 1000000};

constexpr std::array<const char*, RRL_METRICS_BUCKETS> kBoundsText = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",   "0.1",   "0.25",   "0.5",   "1",    "+Inf"};

// $redis_ratelimit_status, lowercased, by status - 1
constexpr std::array<const char*, RRL_METRICS_STATUSES> kStatuses = {
    "passed",        "rejected",     "rejected_dry_run", "failed_open",
    "failed_closed", "failed_local", "delayed",          "delayed_dry_run"};

constexpr std::array<const char*, RRL_METRICS_ERR_KINDS> kErrorKinds = {
    "timeout",     "connection", "noscript",     "moved",      "ask",
    "error_reply", "bad_reply",  "circuit_open", "max_parked", "tls_handshake"};

// an override's kind, by RRL_OVERRIDE_* - 1
constexpr std::array<const char*, RRL_METRICS_OVERRIDE_KINDS> kOverrideKinds = {
    "rate", "unlimited", "block", "invalid"};

// a lease's event, by RRL_LEASE_* (rrl_lease_types.h)
constexpr std::array<const char*, RRL_METRICS_LEASE_EVENTS> kLeaseEvents = {
    "taken", "renewed", "given_back", "refused"};

// where a request of a lease zone was decided, by RRL_LEASE_FROM_*
constexpr std::array<const char*, RRL_METRICS_LEASE_FROM> kLeaseFrom = {
    "lease", "redis"};

// a settlement's result, by RRL_SETTLE_* (rrl_settle.h)
constexpr std::array<const char*, RRL_METRICS_SETTLE_RESULTS> kSettleResults = {
    "settled", "settle_failed"};

constexpr std::array<const char*, RRL_METRICS_CIRCUIT_STATES> kCircuits = {
    "closed", "half_open", "open"};

void header(std::string& out, const char* name, const char* type,
            const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void value(std::string& out, std::uint64_t v) {
    out += ' ';
    out += std::to_string(v);
    out += '\n';
}

// a zone's name as its label's value
std::string zone_label(const rrl_metrics_zone_t& zone) {
    return escape_label_value(std::string_view(zone.name, zone.len));
}

// name{zone="Z",label="each"} count, a line each, for zones with the family
// (wanted); the family's HELP and TYPE first when one has it: without, the
// text is as before
template <typename Wanted, typename Count, std::size_t N>
void zone_family(std::string& out, const rrl_metrics_t& m, const char* name,
                 const char* help, const char* label,
                 const std::array<const char*, N>& values, Wanted wanted,
                 Count count) {
    bool any = false;
    for (std::size_t z = 0; z < m.nzones; z++) {
        any = any || wanted(m.zones[z]);
    }
    if (!any) return;
    header(out, name, "counter", help);
    for (std::size_t z = 0; z < m.nzones; z++) {
        if (!wanted(m.zones[z])) continue;
        std::string zone = zone_label(m.zones[z]);
        for (std::size_t k = 0; k < N; k++) {
            out += name;
            out += "{zone=\"";
            out += zone;
            out += "\",";
            out += label;
            out += "=\"";
            out += values[k];
            out += "\"}";
            value(out, count(m.zones[z], k));
        }
    }
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '"':
                out += "\\\"";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::size_t metrics_bucket(std::uint64_t rtt_us) {
    std::size_t i = 0;
    while (i < kBoundsUs.size() && rtt_us > kBoundsUs[i]) {
        i++;
    }
    return i;
}

std::string metrics_format(const rrl_metrics_t& m) {
    std::string out;
    out.reserve(2048 + m.nzones * 20 * 96);

    header(out, "redis_ratelimit_requests_total", "counter",
           "Requests limited by a zone, by $redis_ratelimit_status; a "
           "request counts once in each zone that applied to it.");
    for (std::size_t z = 0; z < m.nzones; z++) {
        std::string zone = zone_label(m.zones[z]);
        for (std::size_t s = 0; s < RRL_METRICS_STATUSES; s++) {
            out += "redis_ratelimit_requests_total{zone=\"";
            out += zone;
            out += "\",status=\"";
            out += kStatuses[s];
            out += "\"}";
            value(out, m.zones[z].requests[s]);
        }
    }

    // only for zones with overrides=on, lease=, settle=: without, the
    // text is as before
    zone_family(
        out, m, "redis_ratelimit_overrides_total",
        "Requests whose limit in the zone was an override from Redis, by "
        "kind.",
        "kind", kOverrideKinds,
        [](const rrl_metrics_zone_t& z) { return z.overrides != 0; },
        [](const rrl_metrics_zone_t& z, std::size_t k) {
            return z.override_kinds[k];
        });
    zone_family(
        out, m, "redis_ratelimit_leases_total",
        "Leases of the zone's units from Redis, by event: taken (none "
        "alive), renewed (added to one alive), given_back (a call gave "
        "unused units back), refused.",
        "event", kLeaseEvents,
        [](const rrl_metrics_zone_t& z) { return z.lease != 0; },
        [](const rrl_metrics_zone_t& z, std::size_t k) {
            return z.lease_events[k];
        });
    zone_family(
        out, m, "redis_ratelimit_lease_requests_total",
        "Requests of a zone with lease=, by where they were decided: from "
        "a lease in shared memory, or after waiting on Redis.",
        "from", kLeaseFrom,
        [](const rrl_metrics_zone_t& z) { return z.lease != 0; },
        [](const rrl_metrics_zone_t& z, std::size_t k) {
            return z.lease_from[k];
        });
    zone_family(
        out, m, "redis_ratelimit_settlements_total",
        "Settlements (settle=) of the zone's limits, by result: settled "
        "(refunded, charged, or nothing to settle), settle_failed (no number "
        "in the value, or Redis failed: the estimate stays charged).",
        "result", kSettleResults,
        [](const rrl_metrics_zone_t& z) { return z.settle != 0; },
        [](const rrl_metrics_zone_t& z, std::size_t k) {
            return z.settle_results[k];
        });

    header(out, "redis_ratelimit_redis_errors_total", "counter",
           "Redis calls that failed, or were not made, by kind.");
    for (std::size_t k = 0; k < RRL_METRICS_ERR_KINDS; k++) {
        out += "redis_ratelimit_redis_errors_total{kind=\"";
        out += kErrorKinds[k];
        out += "\"}";
        value(out, m.errors[k]);
    }

    header(out, "redis_ratelimit_redis_rtt_seconds", "histogram",
           "Round-trip time of the script calls to Redis, send to reply.");
    std::uint64_t count = 0;
    for (std::size_t b = 0; b < RRL_METRICS_BUCKETS; b++) {
        count += m.rtt_buckets[b];
        out += "redis_ratelimit_redis_rtt_seconds_bucket{le=\"";
        out += kBoundsText[b];
        out += "\"}";
        value(out, count);
    }
    char sum[64];
    std::snprintf(sum, sizeof(sum), "%" PRIu64 ".%06" PRIu64,
                  m.rtt_sum_us / 1000000, m.rtt_sum_us % 1000000);
    out += "redis_ratelimit_redis_rtt_seconds_sum ";
    out += sum;
    out += '\n';
    out += "redis_ratelimit_redis_rtt_seconds_count";
    value(out, count);

    header(out, "redis_ratelimit_parked_requests", "gauge",
           "Requests waiting for Redis, all workers.");
    out += "redis_ratelimit_parked_requests";
    value(out, m.parked);

    header(out, "redis_ratelimit_connections", "gauge",
           "Connected Redis nodes in use, summed over workers (one "
           "connection a node a worker).");
    out += "redis_ratelimit_connections";
    value(out, m.connections);

    header(out, "redis_ratelimit_circuits", "gauge",
           "Circuit breakers of the Redis nodes in use, summed over "
           "workers, by state.");
    for (std::size_t c = 0; c < RRL_METRICS_CIRCUIT_STATES; c++) {
        out += "redis_ratelimit_circuits{state=\"";
        out += kCircuits[c];
        out += "\"}";
        value(out, m.circuits[c]);
    }

    return out;
}

}  // namespace rrl
