#include "script/call_args.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

#include "script/key.hpp"
#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"

namespace rrl {

namespace {

constexpr std::string_view evalsha = "EVALSHA";
constexpr std::size_t number_max =
    std::numeric_limits<std::uint64_t>::digits10 + 1;

// the longest suffix an algorithm's name takes in the call
constexpr std::size_t suffix_max =
    std::max(std::string_view(RRL_OVERRIDES_SUFFIX).size(),
             std::string_view(RRL_LEASE_SUFFIX).size());

template <typename Int>
void append_number(std::string& out, Int v) {
    char digits[number_max + 1];
    auto end = std::to_chars(digits, digits + sizeof(digits), v).ptr;
    out.append(digits, static_cast<std::size_t>(end - digits));
}

// a check's cost field: C, or a lease limit's "C:W:B:T", or a renewal's
// ahead "0:W:0:0:1"
void append_check_cost(std::string& out, const CallLimit& l) {
    if (l.lease != 0 && l.lease_ahead) {
        out.append("0:");
        append_number(out, lease_want(l));
        out.append(":0:0:1");
        return;
    }
    append_number(out, l.cost);
    if (l.lease == 0) return;
    out.push_back(':');
    append_number(out, lease_want(l));
    out.push_back(':');
    append_number(out, l.lease_back);
    out.push_back(':');
    append_number(out, l.lease_back == 0 ? 0 : l.lease_back_at);
}

}  // namespace

std::uint64_t lease_want(const CallLimit& limit) {
    return std::max({limit.lease_want, limit.cost, std::uint64_t{1}});
}

std::size_t call_args_size(const CallLimit* limits, std::size_t n) {
    std::size_t size = evalsha.size() + 40 + number_max;

    for (std::size_t i = 0; i < n; i++) {
        size += key_max_len(limits[i].zone.size()) +
                limits[i].algorithm->name.size() + suffix_max + 4 * number_max;
        if (limits[i].lease != 0) {
            size += 3 * (number_max + 1);  // ":W:B:T", T signed
        }
    }

    return size;
}

std::string limit_key(const CallLimit& l) {
    if (!l.redis_key.empty()) return std::string(l.redis_key);
    std::string key(key_max_len(l.zone.size()), '\0');
    key.resize(write_key(key.data(), l.zone, *l.algorithm, l.key));
    return key;
}

std::string_view algorithm_arg(const CallLimit& l) {
    // each algorithm's name as is, with the overrides' suffix, the lease's
    static const auto names = [] {
        std::array<std::array<std::string, 3>, RRL_ALGORITHM_COUNT> t;
        for (int id = 0; id < RRL_ALGORITHM_COUNT; id++) {
            std::string name(algorithm(id)->name);
            t[id] = {name, name + RRL_OVERRIDES_SUFFIX, name + RRL_LEASE_SUFFIX};
        }
        return t;
    }();
    return names.at(l.algorithm->id)[l.lease != 0 ? 2 : l.overrides ? 1 : 0];
}

void append_cost_arg(std::string& out, const CallLimit& l, CostField cost) {
    if (cost == nullptr) {
        append_check_cost(out, l);
    } else {
        out.append(cost(l));
    }
}

CallArgs call_args(std::string_view sha1,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out) {
    return form_args(sha1, "", nullptr, limits, n, out);
}

CallArgs form_args(std::string_view sha1,
                                        std::string_view form, CostField cost,
                                        const CallLimit* limits, std::size_t n,
                                        std::string& out) {
    SmallVector<std::size_t, 4 + (1 + RRL_ARGS_PER_LIMIT) * 8> ends;
    ends.reserve(4 + (1 + RRL_ARGS_PER_LIMIT) * n);

    std::size_t start = out.size();
    auto push = [&](std::string_view s) {
        out.append(s);
        ends.push_back(out.size());
    };
    auto push_number = [&](std::uint64_t v) {
        append_number(out, v);
        ends.push_back(out.size());
    };

    push(evalsha);
    push(sha1);
    push_number(n);

    for (std::size_t i = 0; i < n; i++) {
        const CallLimit& l = limits[i];
        if (!l.redis_key.empty()) {
            push(l.redis_key);
            continue;
        }
        std::size_t at = out.size();
        out.resize(at + key_max_len(l.zone.size()));
        out.resize(at + write_key(&out[at], l.zone, *l.algorithm, l.key));
        ends.push_back(out.size());
    }

    push(form);

    for (std::size_t i = 0; i < n; i++) {
        const CallLimit& l = limits[i];
        push(algorithm_arg(l));
        push_number(l.limit);
        push_number(l.period_ms);
        push_number(l.burst);
        append_cost_arg(out, l, cost);
        ends.push_back(out.size());
    }

    // views only now: out may have grown on the way
    CallArgs args;
    args.reserve(ends.size());
    for (std::size_t end : ends) {
        args.push_back({out.data() + start, end - start});
        start = end;
    }
    return args;
}

bool to_call_limits(const rrl_call_limit_t* in, std::size_t n,
                    CallLimits& out) {
    out.reserve(n);
    for (std::size_t i = 0; i < n; i++) {
        const Algorithm* a = algorithm(in[i].algorithm);
        if (a == nullptr) return false;
        CallLimit l{};
        l.zone = {in[i].zone, in[i].zone_len};
        l.algorithm = a;
        l.limit = in[i].limit;
        l.period_ms = in[i].period_ms;
        l.burst = in[i].burst;
        l.cost = in[i].cost;
        l.key = {reinterpret_cast<const char*>(in[i].key), in[i].key_len};
        l.redis_key = {in[i].redis_key, in[i].redis_key_len};
        l.overrides = in[i].overrides != 0;
        l.lease = in[i].lease;
        l.lease_want = in[i].lease_want;
        l.lease_back = in[i].lease_back;
        l.lease_back_at = in[i].lease_back_at;
        l.lease_ahead = in[i].lease_ahead != 0;
        l.settle_actual = in[i].settle_actual;
        l.settle_at_us = in[i].settle_at_us;
        l.settle_limit = in[i].settle_limit;
        l.settle_period_ms = in[i].settle_period_ms;
        l.settle_burst = in[i].settle_burst;
        out.push_back(l);
    }
    return true;
}

std::size_t reply_width(const CallLimit& limit) {
    return reply_width(limit.lease != 0, limit.overrides);
}

std::size_t reply_width(bool lease, bool overrides) {
    if (lease) return RRL_REPLY_PER_LIMIT + RRL_REPLY_LEASE;
    return RRL_REPLY_PER_LIMIT + (overrides ? RRL_REPLY_OVERRIDE : 0);
}

std::size_t reply_values(const CallLimit* limits, std::size_t n) {
    std::size_t values = RRL_REPLY_HEADER;
    for (std::size_t i = 0; i < n; i++) values += reply_width(limits[i]);
    return values;
}

std::optional<Lease> read_lease(const CallLimit& limit,
                                const rrl_limit_result_t& result,
                                bool committed, const std::int64_t* values) {
    constexpr std::int64_t max_ttl_us =
        static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;
    std::int64_t granted = values[0], ttl = values[1];

    if (granted < 0 || ttl < 0 || ttl > max_ttl_us) return std::nullopt;

    auto g = static_cast<std::uint64_t>(granted);
    if (g > lease_want(limit)) return std::nullopt;
    if (!result.passed) {
        // nothing granted where the limit did not pass
        if (g != 0 || ttl != 0) return std::nullopt;
        return Lease{0, 0};
    }
    // another limit of the request rejected it: nothing was committed (the
    // script may say what it would have granted, or 0)
    if (!committed) return Lease{0, 0};
    // decided from a lease already held (the lease table's own reply)
    if (g == 0 && ttl == 0) return Lease{0, 0};
    // a pass takes at least its cost (1 for a renewal)
    if (g < std::max(limit.cost, std::uint64_t{1})) return std::nullopt;
    return Lease{g, ttl};
}

std::optional<Override> read_override(const Algorithm& algorithm,
                                      const rrl_limit_result_t& result,
                                      const std::int64_t* values) {
    constexpr std::int64_t max_number = std::int64_t{1} << 53;
    for (std::size_t i = 1; i < RRL_REPLY_OVERRIDE; i++) {
        if (values[i] < 0 || values[i] > max_number) return std::nullopt;
    }

    Override o{static_cast<int>(values[0]),
               static_cast<std::uint64_t>(values[1]),
               static_cast<std::uint64_t>(values[2]),
               static_cast<std::uint64_t>(values[3])};

    switch (values[0]) {
        case RRL_OVERRIDE_NONE:
        case RRL_OVERRIDE_INVALID:
            return o;
        case RRL_OVERRIDE_UNLIMITED:
            if (!result.passed) return std::nullopt;
            return o;
        case RRL_OVERRIDE_BLOCK:
            if (result.passed || o.limit != 0 || o.burst != 0 ||
                o.period_ms == 0) {
                return std::nullopt;
            }
            return o;
        case RRL_OVERRIDE_RATE: {
            std::uint64_t c = capacity(algorithm, o.limit, o.burst);
            if (o.limit == 0 || o.period_ms == 0 || c == 0 ||
                c > max_capacity(algorithm) ||
                state_lifetime_ms(algorithm, o.limit, o.period_ms, o.burst) >
                    RRL_MAX_STATE_MS) {
                return std::nullopt;
            }
            return o;
        }
        default:
            return std::nullopt;
    }
}

std::string override_key(const CallLimit& limit) {
    std::string key = build_key(limit.zone, *limit.algorithm, limit.key);
    // "rrl:{ZONE:KEY}:TAG": the zone name has no brace, a hashed key none
    // either, a client's key may: its tag ends at the last '}', as the
    // script's
    key.resize(key.rfind('}') + 1);
    return key + ":limit";
}

namespace {

// a period in ms as a rate's: "s", "10s", "1m30s", "500ms"
std::string period_text(std::uint64_t ms) {
    constexpr std::pair<std::uint64_t, const char*> units[] = {
        {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    for (const auto& [scale, unit] : units) {
        if (ms == scale && scale != 1) return unit;
    }
    std::string out;
    for (const auto& [scale, unit] : units) {
        if (ms >= scale) {
            out += std::to_string(ms / scale) + unit;
            ms %= scale;
        }
    }
    return out;
}

}  // namespace

std::string logged_rate(const CallLimit& limit, int override,
                        std::string_view zone_rate) {
    if (override == RRL_OVERRIDE_BLOCK) return "block (override)";
    if (override != RRL_OVERRIDE_RATE) return std::string(zone_rate);
    return std::to_string(limit.limit) + "r/" + period_text(limit.period_ms) +
           " (override)";
}

std::string override_message(const CallLimit& limit) {
    return "redis_ratelimit: invalid override of zone \"" +
           std::string(limit.zone) + "\", key \"" + printable(limit.key, 256) +
           "\" in \"" + printable(override_key(limit), 512) +
           "\", the zone's rate applies";
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
