// The algorithms a zone can use: their configuration names, the names the
// Lua script dispatches on, and the short tag in their Redis keys (so that
// changing a zone's algorithm never reads state of another shape).
#pragma once

#include <cstdint>
#include <string_view>

#include "rrl.h"

namespace rrl {

struct Algorithm {
    rrl_algorithm_e id;
    std::string_view name;     // in nginx.conf and in the script's ARGV
    std::string_view key_tag;  // suffix of its Redis keys
};

// By name or alias ("gcra" is leaky_bucket).
const Algorithm* find_algorithm(std::string_view name);
const Algorithm* algorithm(int id);

std::uint64_t effective_burst(const Algorithm& a, std::uint64_t limit,
                              std::uint64_t burst);
std::uint64_t capacity(const Algorithm& a, std::uint64_t limit,
                       std::uint64_t burst);
// The most N + burst may be (UINT64_MAX: no bound of the algorithm's own).
std::uint64_t max_capacity(const Algorithm& a);
// Saturates at UINT64_MAX.
std::uint64_t state_lifetime_ms(const Algorithm& a, std::uint64_t limit,
                                std::uint64_t period_ms, std::uint64_t burst);

}  // namespace rrl
