// The C API of call_args.hpp.
#include <algorithm>
#include <cstring>
#include <memory>

#include "call_args.hpp"
#include "capi.hpp"
#include "delay.hpp"
#include "log.hpp"
#include "reply.hpp"
#include "rrl_call_args.h"

using rrl::capi::guarded;

void rrl_call_limit(rrl_call_limit_t* limit, const rrl_call_limit_t* zone,
                    uint64_t cost, const unsigned char* cost_text,
                    size_t cost_len, const unsigned char* key, size_t key_len,
                    uint64_t delay, char* redis_key) noexcept {
    *limit = *zone;
    limit->zone_limit = zone->limit;
    limit->zone_period_ms = zone->period_ms;
    limit->zone_burst = zone->burst;
    limit->cost = cost_text ? rrl_cost_parse(cost_text, cost_len) : cost;
    limit->key = key;
    limit->key_len = key_len;
    limit->delay = delay;
    limit->redis_key = redis_key;
    limit->redis_key_len = rrl_key_build(redis_key, zone->zone, zone->zone_len,
                                         zone->algorithm, key, key_len);
}

size_t rrl_call_args_size(const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_call_args_size", size_t{0}, [&] {
        rrl::CallLimits l;
        return rrl::to_call_limits(limits, n, l)
                   ? rrl::call_args_size(l.data(), n)
                   : size_t{0};
    });
}

int rrl_call_args(char* buf, size_t size, const char* sha1, size_t sha1_len,
                  const rrl_call_limit_t* limits, size_t n, const char** argv,
                  size_t* argvlen) noexcept {
    return guarded("rrl_call_args", RRL_ERROR, [&] {
        rrl::CallLimits l;
        if (!rrl::to_call_limits(limits, n, l)) return RRL_ERROR;

        std::string out;
        out.reserve(size);
        auto args = rrl::call_args({sha1, sha1_len}, l.data(), n, out);
        return rrl::capi::put_args(out, args, buf, size, argv, argvlen);
    });
}

size_t rrl_reply_values(const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_reply_values", size_t{0}, [&] {
        rrl::CallLimits l;
        return rrl::to_call_limits(limits, n, l)
                   ? rrl::reply_values(l.data(), n)
                   : size_t{0};
    });
}

namespace {

// a reply without its overrides' and leases' integers
using Compact =
    rrl::SmallVector<int64_t, RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * 8>;

// The reply's overrides into overrides (the limits applied: a rate's or a
// block's, else the zone's) and its leases into leases, and the reply
// without them into compact, as wide as one without either; "" or what is
// not the script's.
std::string read_extras(const int64_t* values,
                        const rrl::CallLimits& l, Compact& compact,
                        rrl::SmallVector<rrl::Override, 8>& overrides,
                        rrl::SmallVector<rrl::Lease, 8>& leases) {
    for (std::size_t k = 0; k < RRL_REPLY_HEADER; k++) {
        compact.push_back(values[k]);
    }
    const int64_t* v = values + RRL_REPLY_HEADER;
    bool committed = values[0] == 1;

    for (const rrl::CallLimit& limit : l) {
        for (std::size_t k = 0; k < RRL_REPLY_PER_LIMIT; k++) {
            compact.push_back(v[k]);
        }
        rrl_limit_result_t r{static_cast<int>(v[0]), v[1], v[2], v[3]};
        const int64_t* extra = v + RRL_REPLY_PER_LIMIT;
        rrl::Override o{RRL_OVERRIDE_NONE, limit.limit, limit.period_ms,
                        limit.burst};
        rrl::Lease lease{0, 0};
        if (limit.lease != 0) {
            auto read = rrl::read_lease(limit, r, committed, extra);
            if (!read) return "a bad lease";
            lease = *read;
            // what this server's clients have left: Redis's, and the units
            // of this grant beyond the cost, held here
            if (lease.granted > limit.cost) {
                compact[compact.size() - RRL_REPLY_PER_LIMIT + 1] +=
                    static_cast<int64_t>(lease.granted - limit.cost);
            }
        } else if (limit.overrides) {
            auto read = rrl::read_override(*limit.algorithm, r, extra);
            if (!read) return "a bad override";
            if (read->kind == RRL_OVERRIDE_RATE ||
                read->kind == RRL_OVERRIDE_BLOCK) {
                o = *read;
            }
            o.kind = read->kind;
        }
        overrides.push_back(o);
        leases.push_back(lease);
        v += rrl::reply_width(limit);
    }
    return "";
}

}  // namespace

int rrl_call_reply_decode(const int64_t* values, size_t nvalues,
                          rrl_call_limit_t* limits, size_t n,
                          rrl_limit_result_t* results,
                          rrl_decision_t* decision) noexcept {
    return guarded("rrl_call_reply_decode", RRL_ERROR, [&] {
        // no grant unless this reply gives one (and none on an error)
        for (size_t k = 0; k < n; k++) {
            limits[k].lease_granted = 0;
            limits[k].lease_ttl_us = 0;
        }

        rrl::CallLimits l;
        if (!rrl::to_call_limits(limits, n, l)) return RRL_ERROR;

        // the script's reply to limits with overrides or leases (not a
        // failed request's, -1); the deny cache and the local zone write 4
        // a limit
        Compact compact;
        rrl::SmallVector<rrl::Override, 8> overrides;
        rrl::SmallVector<rrl::Lease, 8> leases;
        bool few[8] = {};
        std::unique_ptr<bool[]> many(n > 8 ? new bool[n]() : nullptr);
        bool* hidden = many ? many.get() : few;

        if (nvalues == rrl::reply_values(l.data(), n) &&
            nvalues != RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n &&
            values[0] != -1) {
            std::string bad =
                read_extras(values, l, compact, overrides, leases);
            if (!bad.empty()) {
                rrl::log(rrl::LogLevel::error,
                         "unexpected script reply: " + bad);
                return RRL_ERROR;
            }
            values = compact.data();
            nvalues = compact.size();
            for (size_t i = 0; i < n; i++) {
                l[i].limit = overrides[i].limit;
                l[i].period_ms = overrides[i].period_ms;
                l[i].burst = overrides[i].burst;
                hidden[i] = overrides[i].kind == RRL_OVERRIDE_UNLIMITED;
            }
        }

        std::string error;
        auto d = rrl::decode_reply(values, nvalues, n, &error, hidden);
        if (!d) {
            rrl::log(rrl::LogLevel::error, "unexpected script reply: " + error);
            return RRL_ERROR;
        }

        size_t i = rrl::over_capacity(l.data(), d->limits.data(), n);
        if (i != n) {
            rrl::log(rrl::LogLevel::error,
                     "unexpected script reply: remaining " +
                         std::to_string(d->limits[i].remaining) +
                         " of zone \"" + std::string(l[i].zone) + "\"");
            return RRL_ERROR;
        }

        std::memcpy(results, d->limits.data(), n * sizeof(rrl_limit_result_t));
        *decision = d->decision;

        for (size_t k = 0; k < overrides.size(); k++) {
            limits[k].override = overrides[k].kind;
            limits[k].limit = overrides[k].limit;
            limits[k].period_ms = overrides[k].period_ms;
            limits[k].burst = overrides[k].burst;
        }
        for (size_t k = 0; k < leases.size(); k++) {
            limits[k].lease_granted = leases[k].granted;
            limits[k].lease_ttl_us = leases[k].ttl_us;
        }
        return RRL_OK;
    });
}

void rrl_deny_keep_shown(rrl_deny_entry_t* entry,
                         const rrl_call_limit_t* limit) noexcept {
    entry->override = limit->override;
    entry->shown_limit = limit->limit;
    entry->shown_period_ms = limit->period_ms;
    entry->shown_burst = limit->burst;
}

void rrl_deny_shown(const rrl_deny_entry_t* entry,
                    rrl_call_limit_t* limit) noexcept {
    limit->override = entry->override;
    limit->limit = entry->shown_limit;
    limit->period_ms = entry->shown_period_ms;
    limit->burst = entry->shown_burst;
}

size_t rrl_override_message(char* buf, size_t size,
                            const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_override_message", size_t{0}, [&] {
        const rrl_call_limit_t* invalid =
            std::find_if(limits, limits + n, [](const rrl_call_limit_t& l) {
                return l.override == RRL_OVERRIDE_INVALID;
            });
        rrl::CallLimits l;
        if (invalid == limits + n || !rrl::to_call_limits(invalid, 1, l)) {
            return size_t{0};
        }
        return rrl::capi::put(rrl::override_message(l[0]), buf, size);
    });
}

int64_t rrl_call_delay(const rrl_call_limit_t* limits,
                       const rrl_limit_result_t* results, size_t n, int passed,
                       uint64_t share) noexcept {
    return guarded("rrl_call_delay", int64_t{0}, [&] {
        return rrl::request_delay_us(limits, results, n, passed != 0, share);
    });
}
