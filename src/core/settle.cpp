#include "settle.hpp"

#include <limits>
#include <stdexcept>

#include "rrl_settle.h"

namespace rrl {

namespace {

constexpr std::size_t number_max =
    std::numeric_limits<std::uint64_t>::digits10 + 1;

}  // namespace

std::optional<std::uint64_t> settle_value(std::string_view text) {
    if (text.empty()) return std::nullopt;

    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
        // leading zeros are digits too: checked at each one, no overflow
        if (value > RRL_SETTLE_MAX) return std::nullopt;
    }
    return value;
}

std::string settle_cost(const CallLimit& limit) {
    if (limit.settle_at_us < 0) {
        throw std::invalid_argument("a settlement's time below 0");
    }
    return std::to_string(limit.cost) + ':' +
           std::to_string(limit.settle_actual) + ':' +
           std::to_string(limit.settle_at_us);
}

std::size_t settle_args_size(const CallLimit* limits, std::size_t n) {
    // the form's word, and ":A:T" beyond a check's cost a limit (a lease
    // limit's "C:W:B:T" is longer than "E:A:T": counted already)
    return call_args_size(limits, n) + kSettleForm.size() +
           2 * (number_max + 1) * n;
}

std::vector<std::string_view> settle_args(std::string_view sha1,
                                          const CallLimit* limits,
                                          std::size_t n, std::string& out) {
    return form_args(sha1, kSettleForm, settle_cost, limits, n, out);
}

}  // namespace rrl
