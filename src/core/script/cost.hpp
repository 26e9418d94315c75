// The cost of a request, from the value of a variable ("cost=$var").
#pragma once

#include <cstdint>
#include <string_view>

namespace rrl {

// The largest cost a directive or a variable can give.
constexpr std::uint64_t max_cost = 1000000000;

// A variable's cost over max_cost: more than any zone's capacity (N + burst,
// each at most max_cost), so no limit ever grants it.
constexpr std::uint64_t over_cost = 2 * max_cost + 2;

// A client must not escape its limit: anything that is not a positive
// decimal integer ("", "0", "-1", "1.5", " 7") costs 1; a value over
// max_cost, however long, costs over_cost. Parsed in 64 bits with an
// overflow guard, so the result never depends on the platform's word size.
std::uint64_t request_cost(std::string_view text) noexcept;

}  // namespace rrl
