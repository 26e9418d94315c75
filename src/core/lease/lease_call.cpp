#include "lease/lease_call.hpp"

#include <algorithm>
#include <memory>

#include "base/guard.hpp"
#include "base/small_vector.hpp"
#include "decide/request.hpp"
#include "lease/ahead.hpp"
#include "lease/lease.hpp"
#include "script/call_reply.hpp"
#include "script/script_reply.hpp"

namespace rrl {

rrl_lease_limit_t lease_limit_of(const rrl_call_limit_t& c,
                                 std::uint64_t cost) {
    return {c.algorithm, c.limit, c.period_ms, c.burst, c.lease, cost};
}

int lease_call_check(Request& request, bool ask, std::int64_t now_us,
                     std::int64_t wall_us, std::int64_t renew_timeout_us) {
    return lease_call_check(request.limits(), request.lease_entries(),
                            request.size(), ask, now_us, wall_us,
                            renew_timeout_us, request.results(),
                            &request.decision(), request.renewals());
}

int lease_call_check(rrl_call_limit_t* limits,
                     rrl_lease_entry_t* const* entries, std::size_t n, bool ask,
                     std::int64_t now_us, std::int64_t wall_us,
                     std::int64_t renew_timeout_us, rrl_limit_result_t* results,
                     rrl_decision_t* decision, std::uint64_t* renew) {
    SmallVector<rrl_lease_limit_t, 8> l;
    std::size_t leased = 0, leasable = 0;

    for (std::size_t i = 0; i < n; i++) {
        l.push_back(lease_limit_of(limits[i], limits[i].cost));
        if (limits[i].lease != 0) leased++;
        // a server never holds more than the largest lease
        if (limits[i].lease != 0 && l[i].cost <= lease_most(l[i])) {
            leasable++;
        }
        renew[i] = 0;
        limits[i].lease_ahead = 0;
    }
    if (leased == 0) return RRL_LEASE_NONE;

    if (!ask) {
        SmallVector<int, 8> flags(n, 0);
        if (leased < n ||
            !lease_decide(l.data(), entries, n, now_us, renew_timeout_us,
                          results, flags.data())) {
            return RRL_LEASE_NONE;
        }
        *decision = decide_results(results, n, wall_us);
        for (std::size_t i = 0; i < n; i++) {
            // a settlement's T: the time Redis knows this lease's charge by
            limits[i].settle_at_us = entries[i]->taken_at_us;
            if (!flags[i]) continue;
            // a renewal asks at no cost; what it wants is all lease
            rrl_lease_limit_t r = lease_limit_of(limits[i], 0);
            if (flags[i] == kLeaseRenewAhead) {
                renew[i] = lease_ahead_size(r, lease_rate(*entries[i], now_us));
                limits[i].lease_ahead = 1;
                continue;
            }
            std::uint64_t back = 0;
            std::int64_t back_at = 0;
            lease_want(r, entries[i], now_us, wall_us, &renew[i], &back,
                       &back_at);
            if (renew[i] == 0) entries[i]->renewing_until_us = 0;
        }
        return RRL_LEASE_DECIDED;
    }

    for (std::size_t i = 0; i < n; i++) {
        rrl_call_limit_t& c = limits[i];
        rrl_lease_entry_t* e = entries[i];
        if (c.lease == 0) continue;
        // one grant beyond the cost in flight at a time: requests that come
        // meanwhile ask for their cost alone, so that a server's concurrent
        // requests do not each take a lease
        bool in_flight = e != nullptr && e->renewing_until_us > now_us;
        if (leasable < n) {
            lease_take_back(l[i], e, now_us, &c.lease_back, &c.lease_back_at);
            c.lease_want = c.cost;
            continue;
        }
        lease_want(l[i], e, now_us, wall_us, &c.lease_want, &c.lease_back,
                   &c.lease_back_at);
        if (in_flight) {
            c.lease_want = c.cost;
        } else if (e != nullptr && c.lease_want > c.cost) {
            e->renewing_until_us = now_us + renew_timeout_us;
        }
    }
    return RRL_LEASE_ASK;
}

int lease_call_learn(const rrl_call_limit_t& limit,
                     const rrl_limit_result_t* result, int how,
                     rrl_lease_entry_t* entry, std::int64_t redis_now_us,
                     std::int64_t sent_us, std::int64_t now_us) {
    rrl_lease_limit_t l = lease_limit_of(limit, limit.cost);
    // this call's grant was the one in flight: over, whatever the end
    bool owner = limit.lease_want > limit.cost;
    int event = -1;

    if (how == RRL_LEASE_CALL_UNSENT) {
        lease_untake_back(l, entry, limit.lease_back, limit.lease_back_at,
                          now_us);
    } else if (how == RRL_LEASE_CALL_PASSED ||
               (how == RRL_LEASE_CALL_REJECTED && !result->passed)) {
        // the entry dropped (the table full) while the grant was in flight:
        // the debt it owed is unknown, its extra units lapse
        std::uint64_t granted = limit.lease_granted;
        if (owner && entry->renewing_until_us == 0) {
            granted = std::min(granted, limit.cost);
        }
        // a renewal ahead's (cost 0, nothing given back): the next
        // window's lease
        event =
            limit.lease_ahead != 0
                ? lease_learn_ahead(l, entry, *result, granted,
                                    limit.lease_ttl_us, redis_now_us, sent_us,
                                    now_us)
                : lease_learn(l, entry, *result, granted, limit.lease_ttl_us,
                              redis_now_us, sent_us, now_us, owner);
    }
    if (owner) lease_renewal_failed(entry);
    return event;
}

bool lease_call_settle(rrl_lease_entry_t* entry, rrl_call_limit_t& limit,
                       std::int64_t now_us) {
    return lease_settle(lease_limit_of(limit, limit.cost), entry, limit.cost,
                        limit.settle_actual, limit.settle_at_us, now_us);
}

bool LeaseRenewal::start(engine::Engine& engine, std::string_view sha,
                         const rrl_call_limit_t& limit, std::uint64_t want,
                         const void* zone, std::int64_t sent_us,
                         rrl_lease_learned_pt learned, void* arg) {
    std::unique_ptr<LeaseRenewal> rn(new LeaseRenewal);
    rn->limit_ = limit;
    rn->key_.assign(reinterpret_cast<const char*>(limit.key), limit.key_len);
    rn->limit_.key = reinterpret_cast<const unsigned char*>(rn->key_.data());
    // made anew from the key copied: the request's ends with its pool
    rn->limit_.redis_key = nullptr;
    rn->limit_.redis_key_len = 0;
    rn->limit_.cost = 0;
    rn->limit_.lease_want = want;
    rn->limit_.lease_back = 0;
    rn->limit_.lease_back_at = 0;
    rn->sent_ = sent_us;
    rn->learned_ = learned;
    rn->arg_ = arg;

    CallLimits l;
    if (!to_call_limits(&rn->limit_, 1, l)) return false;
    // made once: the call and learned() read this one
    rn->redis_key_ = limit_key(l[0]);
    rn->limit_.redis_key = rn->redis_key_.data();
    rn->limit_.redis_key_len = rn->redis_key_.size();
    l[0].redis_key = rn->redis_key_;
    rn->prepare(sha, "", l.data(), &zone, 1,
                RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT + RRL_REPLY_LEASE);

    std::unique_ptr<BackgroundCall> call(std::move(rn));
    LeaseRenewal& r = static_cast<LeaseRenewal&>(*call);
    if (send(call, engine)) return true;
    // not made: at once, so that none is in flight any more
    r.learn(nullptr, RRL_LEASE_CALL_UNSENT, 0);
    return false;
}

void LeaseRenewal::done() {
    rrl_limit_result_t result{};
    rrl_decision_t decision{};
    bool ok =
        result_.rc == RRL_OK && guarded("a lease renewal's reply", false, [&] {
            return call_reply_decode(values_.data(), result_.nvalues, &limit_,
                                     1, &result, &decision);
        });

    learn(&result,
          !ok             ? RRL_LEASE_CALL_FAILED
          : result.passed ? RRL_LEASE_CALL_PASSED
                          : RRL_LEASE_CALL_REJECTED,
          values_[1]);
}

void LeaseRenewal::learn(const rrl_limit_result_t* result, int how,
                         std::int64_t redis_now_us) {
    learned_(arg_, redis_key_.data(), redis_key_.size(), &limit_, result, how,
             redis_now_us, sent_);
}

}  // namespace rrl
