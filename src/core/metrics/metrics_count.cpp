#include "metrics/metrics_count.hpp"

#include "topology/redis_errors.hpp"
#include "base/rrl_call_args_types.h"
#include "base/rrl_lease_types.h"

namespace rrl {

std::optional<std::size_t> metrics_request_counter(unsigned status,
                                                   bool rejected, bool decided,
                                                   bool passed) {
    if (status == 0 || status > RRL_METRICS_STATUSES) return std::nullopt;
    if (rejected && decided && passed) return std::nullopt;
    return status - 1;
}

std::optional<std::size_t> metrics_override_counter(int override,
                                                    bool replied) {
    // RRL_OVERRIDE_RATE .. _INVALID: "rate" .. "invalid"
    if (!replied || override < RRL_OVERRIDE_RATE ||
        override > RRL_OVERRIDE_INVALID) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(override - RRL_OVERRIDE_RATE);
}

std::optional<std::size_t> metrics_lease_counter(bool lease, bool leased,
                                                 bool replied) {
    if (!lease || (!leased && !replied)) return std::nullopt;
    return RRL_LEASE_EVENTS +
           (replied ? RRL_LEASE_FROM_REDIS : RRL_LEASE_FROM_LEASE);
}

std::optional<int> metrics_reply_error(bool replied, bool array,
                                       std::optional<std::string_view> error) {
    if (!replied) return RRL_METRICS_ERR_CONNECTION;
    if (array) return std::nullopt;
    if (!error) return RRL_METRICS_ERR_BAD_REPLY;
    switch (error_kind(*error)) {
        case RRL_REPLY_NOSCRIPT:
            return RRL_METRICS_ERR_NOSCRIPT;
        case RRL_REPLY_MOVED:
            return RRL_METRICS_ERR_MOVED;
        case RRL_REPLY_ASK:
            return RRL_METRICS_ERR_ASK;
        default:
            return RRL_METRICS_ERR_ERROR_REPLY;
    }
}

std::optional<std::uint64_t> metrics_rtt(std::int64_t sent_us,
                                         std::int64_t now_us) {
    if (sent_us <= 0 || now_us < sent_us) return std::nullopt;
    return static_cast<std::uint64_t>(now_us - sent_us);
}

void metrics_gauge_node(rrl_metrics_t* m, bool connected,
                        BreakerState breaker) {
    if (connected) m->connections++;
    switch (breaker) {
        case BreakerState::open:
            m->circuits[RRL_METRICS_CIRCUIT_OPEN]++;
            break;
        case BreakerState::half_open:
            m->circuits[RRL_METRICS_CIRCUIT_HALF_OPEN]++;
            break;
        default:
            m->circuits[RRL_METRICS_CIRCUIT_CLOSED]++;
    }
}

void metrics_gauges_save(const rrl_metrics_t& m, rrl_metrics_gauges_t* g) {
    g->parked = m.parked;
    g->connections = m.connections;
    for (int k = 0; k < RRL_METRICS_CIRCUIT_STATES; k++) {
        g->circuits[k] = m.circuits[k];
    }
}

void metrics_gauges_add(rrl_metrics_t* m, const rrl_metrics_gauges_t* g,
                        std::size_t n) {
    for (std::size_t i = 0; i < n; i++) {
        m->parked += g[i].parked;
        m->connections += g[i].connections;
        for (int k = 0; k < RRL_METRICS_CIRCUIT_STATES; k++) {
            m->circuits[k] += g[i].circuits[k];
        }
    }
}

}  // namespace rrl
