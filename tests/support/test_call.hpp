// One way for the tests to build a call (rrl::Call) of a few limits, each
// given by its Redis key, zone id, algorithm and arguments; and a call's
// arguments as strings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/rrl_call_args_types.h"
#include "engine/call_plan.hpp"
#include "script/call_args.hpp"
#include "script/algorithm.hpp"

namespace rrl_test {

// A limit of a call: its Redis key, zone, algorithm and arguments.
struct PlannedLimit {
    std::string key;
    const void* zone;
    int algorithm;
    std::uint64_t limit, period_ms, burst, cost;
    // a lease's W, B, T; a settlement's A and T
    unsigned lease = 0;
    std::uint64_t want = 0, back = 0;
    std::int64_t back_at = 0;
    std::uint64_t actual = 0;
    std::int64_t at = 0;
    bool overrides = false;  // its zone has overrides=on
};

inline std::unique_ptr<rrl::Call> call_of(const std::vector<PlannedLimit>& in,
                                   std::string_view form = "",
                                   bool cluster = false) {
    std::vector<rrl::CallLimit> limits;
    std::vector<const void*> zones;
    for (const PlannedLimit& x : in) {
        rrl::CallLimit l{};
        l.zone = "z";
        l.algorithm = rrl::algorithm(x.algorithm);
        l.limit = x.limit;
        l.period_ms = x.period_ms;
        l.burst = x.burst;
        l.cost = x.cost;
        l.key = l.redis_key = x.key;
        l.lease = x.lease;
        l.lease_want = x.want;
        l.lease_back = x.back;
        l.lease_back_at = x.back_at;
        l.settle_actual = x.actual;
        l.settle_at_us = x.at;
        l.overrides = x.overrides;
        limits.push_back(l);
        zones.push_back(x.zone);
    }
    return std::make_unique<rrl::Call>("sha", form, limits.data(),
                                       zones.data(), limits.size(), cluster);
}

// The script call's arguments of limits (rrl::call_args()), one string
// each; none when an algorithm is unknown.
inline std::vector<std::string> call_args_of(
    const std::vector<rrl_call_limit_t>& limits, std::string_view sha1) {
    rrl::CallLimits l;
    if (!rrl::to_call_limits(limits.data(), limits.size(), l)) return {};
    std::string out;
    out.reserve(rrl::call_args_size(l.data(), l.size()));
    std::vector<std::string> args;
    for (std::string_view a : rrl::call_args(sha1, l.data(), l.size(), out)) {
        args.emplace_back(a);
    }
    return args;
}

}  // namespace rrl_test
