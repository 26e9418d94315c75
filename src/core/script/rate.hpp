// Parsing of "rate=Nr/PERIOD" and of nginx time values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rrl {

struct Rate {
    std::uint64_t count;
    std::uint64_t period_ms;
};

// nginx time syntax: "250ms", "10s", "5m", "1h30m", "2d", "1w"; a bare
// number is seconds; units in decreasing order, each once. Empty, garbage
// or overflow: nullopt.
std::optional<std::uint64_t> parse_time_ms(std::string_view text);

// "Nr/PERIOD" where PERIOD is a unit ("s", "m", "h", "d") meaning one of it,
// or an nginx time ("10s"). N is 1 to 10^9; PERIOD 1 ms to 365 days.
std::optional<Rate> parse_rate(std::string_view text);

}  // namespace rrl
