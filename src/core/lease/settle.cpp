#include "lease/settle.hpp"

#include <limits>
#include <stdexcept>

#include "base/rrl_decision_types.h"
#include "base/rrl_settle_types.h"

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

bool settle_value_over(std::string_view text) {
    if (text.empty()) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    return !settle_value(text);
}

int settle_plan(unsigned status, bool leased, std::int64_t redis_now_us,
                const rrl_call_limit_t& zone, const rrl_call_limit_t& charged,
                std::string_view text, rrl_call_limit_t& out) {
    // a rejection, a cached one, a failure or a local decision took none
    if ((status != RRL_STATUS_PASSED && status != RRL_STATUS_DELAYED &&
         status != RRL_STATUS_DELAYED_DRY_RUN) ||
        charged.key_len == 0) {
        return RRL_SETTLE_NONE;
    }

    auto actual = settle_value(text);
    if (!actual) return RRL_SETTLE_FAILED;
    // nothing to settle; nor for a key unlimited by its override when
    // charged: it took nothing (sent, the override in force later would
    // make it a refund or a debt of units never charged)
    if (*actual == charged.cost || charged.override == RRL_OVERRIDE_UNLIMITED) {
        return RRL_SETTLE_SETTLED;
    }

    out = zone;
    out.key = charged.key;
    out.key_len = charged.key_len;
    out.cost = charged.cost;
    out.settle_actual = *actual;
    out.settle_at_us = leased ? charged.settle_at_us : redis_now_us;
    // overrides=on: the limit the charge applied (the reply's: an
    // override's rate, else the zone's), settled with whatever is in force
    // later
    out.settle_limit = charged.overrides ? charged.limit : 0;
    out.settle_period_ms = charged.overrides ? charged.period_ms : 0;
    out.settle_burst = charged.overrides ? charged.burst : 0;
    return RRL_SETTLE_SEND;
}

std::string settle_cost(const CallLimit& limit) {
    if (limit.settle_at_us < 0) {
        throw std::invalid_argument("a settlement's time below 0");
    }
    std::string field = std::to_string(limit.cost) + ':' +
                        std::to_string(limit.settle_actual) + ':' +
                        std::to_string(limit.settle_at_us);
    if (limit.overrides && limit.settle_limit != 0 &&
        limit.settle_period_ms != 0) {
        field += ':' + std::to_string(limit.settle_limit) + ':' +
                 std::to_string(limit.settle_period_ms) + ':' +
                 std::to_string(limit.settle_burst);
    }
    return field;
}

std::size_t settle_args_size(const CallLimit* limits, std::size_t n) {
    // the form's word, and ":A:T" (":N:P:B" too) beyond a check's cost a
    // limit (a lease limit's "C:W:B:T" is longer than "E:A:T": counted
    // already)
    return call_args_size(limits, n) + kSettleForm.size() +
           5 * (number_max + 1) * n;
}

CallArgs settle_args(std::string_view sha1,
                                          const CallLimit* limits,
                                          std::size_t n, std::string& out) {
    return form_args(sha1, kSettleForm, settle_cost, limits, n, out);
}

}  // namespace rrl
