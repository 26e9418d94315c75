// Settlement (settle=VALUE): after a request, its actual cost A against the
// estimate E charged up front. The value's rule and the script's settle
// form: a check's layout with ARGV[1] "settle" and each limit's cost field
// "E:A:T" (T: Redis's time in us of the charge).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "script/call_args.hpp"

namespace rrl {

// The word of ARGV[1] that makes a call a settlement.
inline constexpr std::string_view kSettleForm = "settle";

// A of settle=VALUE: digits alone, not empty, at most RRL_SETTLE_MAX.
std::optional<std::uint64_t> settle_value(std::string_view text);

// Digits alone, not empty, but over RRL_SETTLE_MAX.
bool settle_value_over(std::string_view text);

// The plan of a request's limit with settle= (rrl_settle_plan()).
int settle_plan(unsigned status, bool leased, std::int64_t redis_now_us,
                const rrl_call_limit_t& zone, const rrl_call_limit_t& charged,
                std::string_view text, rrl_call_limit_t& out);

// "E:A:T" of a limit, "E:A:T:N:P:B" with the limit the charge applied
// (overrides=on); T below 0 is none of Redis's times.
std::string settle_cost(const CallLimit& limit);

// The most bytes settle_args() writes for these limits.
std::size_t settle_args_size(const CallLimit* limits, std::size_t n);

// The settle form's arguments, appended to out (see call_args()); throws
// std::invalid_argument for a T below 0.
CallArgs settle_args(std::string_view sha1,
                                          const CallLimit* limits,
                                          std::size_t n, std::string& out);

}  // namespace rrl
