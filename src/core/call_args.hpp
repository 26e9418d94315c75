// The arguments of a request's script call, in the order the script reads
// them: EVALSHA <sha1> <n> <key 1..n> "" then, per limit, <algorithm> <N>
// <period ms> <burst> <cost>. The "" is ARGV[1]: no injected time, the
// script asks Redis. Every other file indexes them through rrl_call_args.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithm.hpp"
#include "rrl.h"

namespace rrl {

// one limit of the request whose key is not empty
struct CallLimit {
    std::string_view zone;
    const Algorithm* algorithm;
    std::uint64_t limit;  // N of rate=Nr/PERIOD
    std::uint64_t period_ms;
    std::uint64_t burst;  // as the algorithm uses it
    std::uint64_t cost;
    std::string_view key;  // the client's, as evaluated
};

// The most bytes call_args() writes for these limits.
std::size_t call_args_size(const CallLimit* limits, std::size_t n);

// The call's arguments, appended to out (reserved by the caller, so that
// views into it stay valid), one view each.
std::vector<std::string_view> call_args(std::string_view sha1,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out);

// The first limit whose result has more remaining than its zone can ever
// hold (a reply not the script's), or n when there is none.
std::size_t over_capacity(const CallLimit* limits,
                          const rrl_limit_result_t* results, std::size_t n);

}  // namespace rrl
