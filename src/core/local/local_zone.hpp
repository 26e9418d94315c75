// A local zone's entries (rrl_local_zone.h): the share of a zone one server
// allows alone with local_share=1/K, and a key's entry decided with
// local_algorithms.hpp's algorithms, kept until the state no longer matters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "local/local_algorithms.hpp"
#include "base/rrl_local_zone_types.h"

namespace rrl {

struct LocalShare {
    std::uint64_t limit;
    std::uint64_t burst;
};

// N and burst of a zone (burst as effective_burst() gives it) that one of
// share servers allows alone: its share of each, at least one request per
// period, and a token bucket keeps at least one token. A share of 0 is 1.
LocalShare local_share(int algorithm, std::uint64_t limit, std::uint64_t burst,
                       std::uint64_t share);

// capacity() of the share: X-RateLimit-Limit while decided locally; 0 for
// an unknown algorithm.
std::uint64_t local_capacity(int algorithm, std::uint64_t limit,
                             std::uint64_t burst, std::uint64_t share);

// As local_check() on the share of limit, on entry (null: none).
bool local_zone_check(const LocalLimit& limit, std::uint64_t share,
                      std::int64_t now_us, const rrl_local_entry_t* entry,
                      rrl_local_entry_t* next, std::int64_t* values);

// rrl_local_zone_decide(): the reply's number of values, 0 on failure.
std::size_t local_zone_decide(const rrl_local_limit_t* limits, std::size_t n,
                              std::uint64_t share, std::int64_t now_us,
                              rrl_local_entry_t* next, std::int64_t* values);

}  // namespace rrl
