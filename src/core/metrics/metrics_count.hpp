// What counts as what in "redis_ratelimit_metrics": a request in the
// counters of its zones, a script call's reply as an error kind and a
// round trip, a node in use in the gauges. metrics.hpp formats the page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/breaker.hpp"
#include "base/rrl_types.h"
#include "base/rrl_metrics_count_types.h"

namespace rrl {

std::optional<std::size_t> metrics_request_counter(unsigned status,
                                                   bool rejected, bool decided,
                                                   bool passed);

std::optional<std::size_t> metrics_override_counter(int override,
                                                    bool replied);

std::optional<std::size_t> metrics_lease_counter(bool lease, bool leased,
                                                 bool replied);

// error: an error reply's text, nullopt for another reply
std::optional<int> metrics_reply_error(bool replied, bool array,
                                       std::optional<std::string_view> error);

// the round trip, when it counts
std::optional<std::uint64_t> metrics_rtt(std::int64_t sent_us,
                                         std::int64_t now_us);

// a node in use: connected or not, its circuit's state
void metrics_gauge_node(rrl_metrics_t* m, bool connected, BreakerState breaker);

void metrics_gauges_save(const rrl_metrics_t& m, rrl_metrics_gauges_t* g);

void metrics_gauges_add(rrl_metrics_t* m, const rrl_metrics_gauges_t* g,
                        std::size_t n);

}  // namespace rrl
