#include "call_args.hpp"

#include <limits>

#include "key.hpp"
#include "rrl.h"

namespace rrl {

namespace {

constexpr std::string_view evalsha = "EVALSHA";
constexpr std::size_t number_max =
    std::numeric_limits<std::uint64_t>::digits10 + 1;

}  // namespace

std::size_t call_args_size(const CallLimit* limits, std::size_t n) {
    std::size_t size = evalsha.size() + 40 + number_max;

    for (std::size_t i = 0; i < n; i++) {
        size += key_max_len(limits[i].zone.size()) +
                limits[i].algorithm->name.size() + 4 * number_max;
    }

    return size;
}

std::vector<std::string_view> call_args(std::string_view sha1,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out) {
    std::vector<std::size_t> ends;
    ends.reserve(4 + (1 + RRL_ARGS_PER_LIMIT) * n);

    std::size_t start = out.size();
    auto push = [&](std::string_view s) {
        out.append(s);
        ends.push_back(out.size());
    };

    push(evalsha);
    push(sha1);
    push(std::to_string(n));

    for (std::size_t i = 0; i < n; i++) {
        push(build_key(limits[i].zone, *limits[i].algorithm, limits[i].key));
    }

    push("");

    for (std::size_t i = 0; i < n; i++) {
        const CallLimit& l = limits[i];
        push(l.algorithm->name);
        push(std::to_string(l.limit));
        push(std::to_string(l.period_ms));
        push(std::to_string(l.burst));
        push(std::to_string(l.cost));
    }

    // views only now: out may have grown on the way
    std::vector<std::string_view> args;
    args.reserve(ends.size());
    for (std::size_t end : ends) {
        args.emplace_back(out.data() + start, end - start);
        start = end;
    }
    return args;
}

std::size_t over_capacity(const CallLimit* limits,
                          const rrl_limit_result_t* results, std::size_t n) {
    for (std::size_t i = 0; i < n; i++) {
        const CallLimit& l = limits[i];
        // a negative one too: no reply of the script's
        if (static_cast<std::uint64_t>(results[i].remaining) >
            capacity(*l.algorithm, l.limit, l.burst)) {
            return i;
        }
    }
    return n;
}

}  // namespace rrl
