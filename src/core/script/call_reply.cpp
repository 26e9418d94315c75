#include "script/call_reply.hpp"

#include <cstring>
#include <memory>
#include <string>

#include "script/call_args.hpp"
#include "base/log.hpp"
#include "script/script_reply.hpp"
#include "base/small_vector.hpp"

namespace rrl {

namespace {

// a reply without its overrides' and leases' integers
using Compact =
    SmallVector<int64_t, RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * 8>;

// The reply's overrides into overrides (the limits applied: a rate's or a
// block's, else the zone's) and its leases into leases, and the reply
// without them into compact, as wide as one without either; "" or what is
// not the script's.
std::string read_extras(const int64_t* values, const CallLimits& l,
                        Compact& compact, SmallVector<Override, 8>& overrides,
                        SmallVector<Lease, 8>& leases) {
    for (std::size_t k = 0; k < RRL_REPLY_HEADER; k++) {
        compact.push_back(values[k]);
    }
    const int64_t* v = values + RRL_REPLY_HEADER;
    bool committed = values[0] == 1;

    for (const CallLimit& limit : l) {
        for (std::size_t k = 0; k < RRL_REPLY_PER_LIMIT; k++) {
            compact.push_back(v[k]);
        }
        rrl_limit_result_t r{static_cast<int>(v[0]), v[1], v[2], v[3]};
        const int64_t* extra = v + RRL_REPLY_PER_LIMIT;
        Override o{RRL_OVERRIDE_NONE, limit.limit, limit.period_ms,
                   limit.burst};
        Lease lease{0, 0};
        if (limit.lease != 0) {
            auto read = read_lease(limit, r, committed, extra);
            if (!read) return "a bad lease";
            lease = *read;
            // what this server's clients have left: Redis's, and the units
            // of this grant beyond the cost, held here
            if (lease.granted > limit.cost) {
                compact[compact.size() - RRL_REPLY_PER_LIMIT + 1] +=
                    static_cast<int64_t>(lease.granted - limit.cost);
            }
        } else if (limit.overrides) {
            auto read = read_override(*limit.algorithm, r, extra);
            if (!read) return "a bad override";
            if (read->kind == RRL_OVERRIDE_RATE ||
                read->kind == RRL_OVERRIDE_BLOCK) {
                o = *read;
            }
            o.kind = read->kind;
        }
        overrides.push_back(o);
        leases.push_back(lease);
        v += reply_width(limit);
    }
    return "";
}

}  // namespace

bool call_reply_decode(const std::int64_t* values, std::size_t nvalues,
                       rrl_call_limit_t* limits, std::size_t n,
                       rrl_limit_result_t* results, rrl_decision_t* decision) {
    {
        // no grant unless this reply gives one (and none on an error)
        for (size_t k = 0; k < n; k++) {
            limits[k].lease_granted = 0;
            limits[k].lease_ttl_us = 0;
        }

        CallLimits l;
        if (!to_call_limits(limits, n, l)) return false;

        // the script's reply to limits with overrides or leases (not a
        // failed request's, -1); the deny cache and the local zone write 4
        // a limit
        Compact compact;
        SmallVector<Override, 8> overrides;
        SmallVector<Lease, 8> leases;
        bool few[8] = {};
        std::unique_ptr<bool[]> many(n > 8 ? new bool[n]() : nullptr);
        bool* hidden = many ? many.get() : few;

        if (nvalues == reply_values(l.data(), n) &&
            nvalues != RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n &&
            values[0] != -1) {
            std::string bad =
                read_extras(values, l, compact, overrides, leases);
            if (!bad.empty()) {
                log(LogLevel::error, "unexpected script reply: " + bad);
                return false;
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
        auto d = decode_reply(values, nvalues, n, &error, hidden);
        if (!d) {
            log(LogLevel::error, "unexpected script reply: " + error);
            return false;
        }

        size_t i = over_capacity(l.data(), d->limits.data(), n);
        if (i != n) {
            log(LogLevel::error, "unexpected script reply: remaining " +
                                     std::to_string(d->limits[i].remaining) +
                                     " of zone \"" + std::string(l[i].zone) +
                                     "\"");
            return false;
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
        return true;
    }
}

std::string invalid_override_message(const rrl_call_limit_t* limits,
                                     std::size_t n) {
    for (std::size_t i = 0; i < n; i++) {
        if (limits[i].override != RRL_OVERRIDE_INVALID) continue;
        CallLimits l;
        if (!to_call_limits(&limits[i], 1, l)) return "";
        return override_message(l[0]);
    }
    return "";
}

}  // namespace rrl
