// A request's limits as the core's (CallLimit), and the script's arguments
// for them. The single-call form, in the order the script reads it:
// EVALSHA <sha1> <n> <key 1..n> "" then, per limit, <algorithm> <N>
// <period ms> <burst> <cost>; the "" is ARGV[1]: no injected time, the
// script asks Redis. The engine sends the batch form (engine/batch.hpp)
// from the same fields (algorithm_arg(), append_cost_arg()); call_args()
// writes the single-call form whole, for the unit tests that check those
// fields' layout (indexed through rrl_call_args_types.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "script/algorithm.hpp"
#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"
#include "base/small_vector.hpp"

namespace rrl {

// one limit of the request whose key is not empty
struct CallLimit {
    std::string_view zone;
    const Algorithm* algorithm;
    std::uint64_t limit;  // N of rate=Nr/PERIOD
    std::uint64_t period_ms;
    std::uint64_t burst;  // as the algorithm uses it
    std::uint64_t cost;
    std::string_view key;    // the client's, as evaluated
    bool overrides = false;  // its zone has overrides=on
    // lease=P% (P, 0: none): the call's cost is "C:W:B:T" (see
    // rrl_call_args.h), W at least max(cost, 1), T 0 when B is
    unsigned lease = 0;
    std::uint64_t lease_want = 0;
    std::uint64_t lease_back = 0;
    std::int64_t lease_back_at = 0;
    // a renewal of the next window's units: its cost "0:W:0:0:1"
    bool lease_ahead = false;
    // settle=VALUE (settle.hpp): A, and T, Redis's time of the charge
    std::uint64_t settle_actual = 0;
    std::int64_t settle_at_us = 0;
    // and the limit the charge applied (overrides=on; 0: not known)
    std::uint64_t settle_limit = 0;
    std::uint64_t settle_period_ms = 0;
    std::uint64_t settle_burst = 0;
    // its state's Redis key (key.hpp) when made already, else empty
    std::string_view redis_key;
};

// A request's limits: its few without a heap allocation.
using CallLimits = SmallVector<CallLimit, 8>;

// The C API's limits as the core's (views into in); false: a bad algorithm.
bool to_call_limits(const rrl_call_limit_t* in, std::size_t n,
                    CallLimits& out);

// W of a lease limit: what it asks for, at least the cost and 1.
std::uint64_t lease_want(const CallLimit& limit);

// A limit's integers in the script's reply: 4, then the override's and the
// lease's where its zone has them.
std::size_t reply_width(const CallLimit& limit);
std::size_t reply_width(bool lease, bool overrides);

// The most bytes call_args() writes for these limits.
std::size_t call_args_size(const CallLimit* limits, std::size_t n);

// The call's arguments, appended to out (reserved by the caller, so that
// views into it stay valid), one view each: inline for a few limits.
using CallArgs =
    SmallVector<std::string_view, 4 + (1 + RRL_ARGS_PER_LIMIT) * 8>;
CallArgs call_args(std::string_view sha1,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out);

// A cost field of the script's other forms (settle.hpp), nullptr: a
// check's, C or a lease limit's "C:W:B:T".
using CostField = std::string (*)(const CallLimit&);

// A limit's state key: its redis_key when made already, else made.
std::string limit_key(const CallLimit& limit);

// A limit's algorithm argument: its name, with the suffix its zone's
// overrides or lease add (static storage).
std::string_view algorithm_arg(const CallLimit& limit);

// A limit's cost argument, appended to out: cost(limit), or a check's (C,
// or a lease limit's "C:W:B:T") when cost is nullptr.
void append_cost_arg(std::string& out, const CallLimit& limit, CostField cost);

// The layout of call_args() for the script's other forms (settle.hpp):
// ARGV[1] is form and each limit's cost field cost(limit) (nullptr: a
// check's, C or a lease limit's "C:W:B:T").
CallArgs form_args(std::string_view sha1,
                                        std::string_view form, CostField cost,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out);

// The integers of the script's reply to a check of these limits.
std::size_t reply_values(const CallLimit* limits, std::size_t n);

// An override as the script applied it (RRL_REPLY_OVERRIDE integers after
// a limit's 4): nullopt when it is not one the script can have sent for
// that result.
struct Override {
    int kind;  // RRL_OVERRIDE_*
    std::uint64_t limit;
    std::uint64_t period_ms;
    std::uint64_t burst;
};
std::optional<Override> read_override(const Algorithm& algorithm,
                                      const rrl_limit_result_t& result,
                                      const std::int64_t* values);

// The Redis key of limit's override: its state's hash tag + ":limit".
std::string override_key(const CallLimit& limit);

// The rate a rejection's log line names: the zone's as written (zone_rate),
// or the override applied: "2r/10s (override)", "block (override)".
std::string logged_rate(const CallLimit& limit, int override,
                        std::string_view zone_rate);

// The log line of limit's invalid override.
std::string override_message(const CallLimit& limit);

// A lease's grant and lifetime as the script sent them (RRL_REPLY_LEASE
// integers after a limit's 4), for a limit whose result is result and that
// all the request's limits passed or not (committed): {granted, ttl_us},
// granted 0 unless committed; nullopt when not one the script can have sent.
struct Lease {
    std::uint64_t granted;
    std::int64_t ttl_us;
};
std::optional<Lease> read_lease(const CallLimit& limit,
                                const rrl_limit_result_t& result,
                                bool committed, const std::int64_t* values);

// The first limit whose result has more remaining than its zone can ever
// hold (a reply not the script's), or n when there is none.
std::size_t over_capacity(const CallLimit* limits,
                          const rrl_limit_result_t* results, std::size_t n);

}  // namespace rrl
