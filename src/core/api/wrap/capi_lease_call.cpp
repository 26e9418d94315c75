// The C API of the lease rules on call limits, and renewals
// (rrl_lease_call.h): no exception crosses into nginx.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/wrap/capi.hpp"
#include "api/wrap/capi_engine.hpp"
#include "script/call_args.hpp"
#include "lease/lease.hpp"
#include "script/script_reply.hpp"
#include "api/rrl_lease_call.h"
#include "base/small_vector.hpp"

using rrl::capi::guarded;

namespace {

rrl_lease_limit_t lease_limit(const rrl_call_limit_t& c, std::uint64_t cost) {
    return {c.algorithm, c.limit, c.period_ms, c.burst, c.lease, cost};
}

// A renewal in flight: its limit (the key copied), arguments and reply.
struct Renewal {
    rrl_call_limit_t limit;
    std::string key;
    std::string redis_key;
    std::int64_t
        values[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT + RRL_REPLY_LEASE];
    rrl_engine_result_t result;
    const void* zone;
    std::int64_t sent;
    rrl_lease_learned_pt learned;
    void* arg;
};

void renewed(void*, void* data) {
    std::unique_ptr<Renewal> rn(static_cast<Renewal*>(data));
    rrl_limit_result_t result{};
    rrl_decision_t decision{};
    bool ok = rn->result.rc == RRL_OK &&
              rrl_call_reply_decode(rn->values, rn->result.nvalues, &rn->limit,
                                    1, &result, &decision) == RRL_OK;

    int how = !ok             ? RRL_LEASE_CALL_FAILED
              : result.passed ? RRL_LEASE_CALL_PASSED
                              : RRL_LEASE_CALL_REJECTED;

    rn->learned(rn->arg, rn->redis_key.data(), rn->redis_key.size(),
                &rn->limit, &result, how, rn->values[1], rn->sent);
}

}  // namespace

extern "C" {

int rrl_lease_call_check(rrl_call_limit_t* limits,
                         rrl_lease_entry_t* const* entries, size_t n, int ask,
                         int64_t now_us, int64_t wall_us,
                         int64_t renew_timeout_us,
                         rrl_limit_result_t* results, rrl_decision_t* decision,
                         uint64_t* renew) noexcept {
    return guarded("a lease check", RRL_LEASE_NONE, [&] {
        rrl::SmallVector<rrl_lease_limit_t, 8> l;
        std::size_t leased = 0, leasable = 0;

        for (std::size_t i = 0; i < n; i++) {
            l.push_back(lease_limit(limits[i], limits[i].cost));
            if (limits[i].lease != 0) leased++;
            // a server never holds more than the largest lease
            if (limits[i].lease != 0 && l[i].cost <= rrl::lease_most(l[i])) {
                leasable++;
            }
            renew[i] = 0;
        }
        if (leased == 0) return RRL_LEASE_NONE;

        if (!ask) {
            rrl::SmallVector<int, 8> flags(n, 0);
            if (leased < n ||
                !rrl::lease_decide(l.data(), entries, n, now_us,
                                   renew_timeout_us, results, flags.data())) {
                return RRL_LEASE_NONE;
            }
            *decision = rrl::decide_results(results, n, wall_us);
            for (std::size_t i = 0; i < n; i++) {
                // a settlement's T: the time Redis knows this lease's
                // charge by
                limits[i].settle_at_us = entries[i]->taken_at_us;
                if (!flags[i]) continue;
                // a renewal asks at no cost; what it wants is all lease
                rrl_lease_limit_t r = lease_limit(limits[i], 0);
                std::uint64_t back = 0;
                std::int64_t back_at = 0;
                rrl_lease_want(&r, entries[i], now_us, wall_us, &renew[i],
                               &back, &back_at);
                if (renew[i] == 0) entries[i]->renewing_until_us = 0;
            }
            return RRL_LEASE_DECIDED;
        }

        for (std::size_t i = 0; i < n; i++) {
            rrl_call_limit_t& c = limits[i];
            rrl_lease_entry_t* e = entries[i];
            if (c.lease == 0) continue;
            // one grant beyond the cost in flight at a time: requests that
            // come meanwhile ask for their cost alone, so that a server's
            // concurrent requests do not each take a lease
            bool in_flight = e != nullptr && e->renewing_until_us > now_us;
            if (leasable < n) {
                rrl::lease_take_back(l[i], e, now_us, &c.lease_back,
                                     &c.lease_back_at);
                c.lease_want = c.cost;
                continue;
            }
            rrl_lease_want(&l[i], e, now_us, wall_us, &c.lease_want,
                           &c.lease_back, &c.lease_back_at);
            if (in_flight) {
                c.lease_want = c.cost;
            } else if (e != nullptr && c.lease_want > c.cost) {
                e->renewing_until_us = now_us + renew_timeout_us;
            }
        }
        return RRL_LEASE_ASK;
    });
}

int rrl_lease_call_learn(const rrl_call_limit_t* limit,
                         const rrl_limit_result_t* result, int how,
                         rrl_lease_entry_t* entry, int64_t redis_now_us,
                         int64_t sent_us, int64_t now_us) noexcept {
    return guarded("a lease's answer", -1, [&] {
        rrl_lease_limit_t l = lease_limit(*limit, limit->cost);
        // this call's grant was the one in flight: over, whatever the end
        bool owner = limit->lease_want > limit->cost;
        int event = -1;

        if (how == RRL_LEASE_CALL_UNSENT) {
            rrl::lease_untake_back(l, entry, limit->lease_back,
                                   limit->lease_back_at, now_us);
        } else if (how == RRL_LEASE_CALL_PASSED ||
                   (how == RRL_LEASE_CALL_REJECTED && !result->passed)) {
            // the entry dropped (the table full) while the grant was in
            // flight: the debt it owed is unknown, its extra units lapse
            std::uint64_t granted = limit->lease_granted;
            if (owner && entry->renewing_until_us == 0) {
                granted = std::min(granted, limit->cost);
            }
            event = rrl::lease_learn(l, entry, *result, granted,
                                     limit->lease_ttl_us, redis_now_us, sent_us,
                                     now_us, owner);
        }
        if (owner) rrl_lease_renewal_failed(entry);
        return event;
    });
}

int rrl_lease_renew(rrl_engine_t* engine, const char* sha, size_t sha_len,
                    const rrl_call_limit_t* limit, uint64_t want,
                    const void* zone, int64_t sent_us,
                    rrl_lease_learned_pt learned, void* arg) noexcept {
    Renewal* made = guarded("a lease renewal", (Renewal*)nullptr, [&] {
        auto rn = std::make_unique<Renewal>();
        rn->limit = *limit;
        rn->key.assign(reinterpret_cast<const char*>(limit->key),
                       limit->key_len);
        rn->limit.key = reinterpret_cast<const unsigned char*>(rn->key.data());
        // made anew from the key copied: the request's ends with its pool
        rn->limit.redis_key = nullptr;
        rn->limit.redis_key_len = 0;
        rn->limit.cost = 0;
        rn->limit.lease_want = want;
        rn->limit.lease_back = 0;
        rn->limit.lease_back_at = 0;
        rn->zone = zone;
        rn->sent = sent_us;
        rn->learned = learned;
        rn->arg = arg;

        rrl::CallLimits l;
        if (!rrl::to_call_limits(&rn->limit, 1, l)) return (Renewal*)nullptr;
        rn->redis_key = rrl::limit_key(l[0]);

        rn->result = {};
        rn->result.values = rn->values;
        rn->result.capacity = sizeof(rn->values) / sizeof(rn->values[0]);

        if (rrl::capi::engine_of(engine).call({sha, sha_len}, "", nullptr,
                                              l.data(), &rn->zone, 1,
                                              &rn->result, renewed, rn.get(),
                                              rn.get()) == nullptr) {
            // not made: at once, so that none is in flight any more
            learned(arg, rn->redis_key.data(), rn->redis_key.size(), &rn->limit,
                    nullptr, RRL_LEASE_CALL_UNSENT, 0, sent_us);
            return (Renewal*)nullptr;
        }
        return rn.release();
    });

    return made != nullptr ? RRL_OK : RRL_ERROR;
}

}  // extern "C"
