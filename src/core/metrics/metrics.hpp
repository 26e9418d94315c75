// The Prometheus text exposition (format 0.0.4) of the module's metrics
// ("redis_ratelimit_metrics"): names, label escaping, and the round-trip
// histogram's fixed buckets, cumulative as Prometheus wants them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/rrl_types.h"

namespace rrl {

// a label value between double quotes: \ " and newline escaped
std::string escape_label_value(std::string_view value);

// the bucket of a round trip of rtt_us: the first bound >= it, or +Inf's
std::size_t metrics_bucket(std::uint64_t rtt_us);

std::string metrics_format(const rrl_metrics_t& m);

}  // namespace rrl
