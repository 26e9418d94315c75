// The lease rules (lease.hpp) on a request's call limits: what is decided
// from leases, what a call to Redis asks for and gives back, what its end
// puts into the key's entry, and a lease's renewal: a call of its own on
// the worker's engine, in the background (background_call.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/rrl_lease_call_types.h"
#include "lease/background_call.hpp"

namespace rrl {

class Request;

// A call limit's lease numbers, at cost.
rrl_lease_limit_t lease_limit_of(const rrl_call_limit_t& limit,
                                 std::uint64_t cost);

// A request of n limits at now_us; entries[i]: limit i's entry in the lease
// table, or nullptr (none, or not a lease zone's). Without ask:
// RRL_LEASE_DECIDED when every limit is a lease zone's with units left:
// taken, results[i] limit i's result (lease_decide()) and decision the
// request's, at wall_us (X-RateLimit-Reset counts from it), renew[i] the
// units a renewal of limit i wants now (0: none; the entry then has one in
// flight; its lease_ahead 1 when they are the next window's: ahead.hpp),
// settle_at_us the lease's taken_at_us (a settlement's T); else
// RRL_LEASE_NONE and nothing changed but promotions. With ask (the request goes
// to Redis: after the deny cache, which may answer it without a call),
// RRL_LEASE_ASK: each lease limit's lease_want, lease_back and
// lease_back_at are set: an ended lease's units go back with the call; it
// wants its cost alone when some limit of the request has no lease= or a
// cost over its largest lease (such a request is never decided from
// leases, and a lease would be units no request of its location uses) or
// while a grant beyond a cost is in flight for its entry; else a lease
// too, and this call's grant is the one in flight (lease_want > cost),
// until renew_timeout_us or its end (lease_call_learn()).
int lease_call_check(rrl_call_limit_t* limits,
                     rrl_lease_entry_t* const* entries, std::size_t n, bool ask,
                     std::int64_t now_us, std::int64_t wall_us,
                     std::int64_t renew_timeout_us, rrl_limit_result_t* results,
                     rrl_decision_t* decision, std::uint64_t* renew);

// lease_call_check() on a request: its limits, the lease entries the
// caller set (request.lease_entries()), its results and decision, and each
// limit's renewal into request.renewals().
int lease_call_check(Request& request, bool ask, std::int64_t now_us,
                     std::int64_t wall_us, std::int64_t renew_timeout_us);

// The end of a call for a lease limit (how: RRL_LEASE_CALL_*; result:
// Redis's answer for the limit, REJECTED and PASSED only) into its key's
// entry: a pass's grant (limit.lease_granted) is added; the call's grant in
// flight (lease_want > cost), if any, is over on every end, and the debt it
// owed with it (nothing granted was kept). A grant whose entry was dropped
// meanwhile (the table full: no grant in flight there any more) keeps none
// of its extra units: the debt it owed is lost with the entry. UNSENT puts
// the units it was to give back into the entry again, while it is the same
// ended lease. A renewal ahead's (limit.lease_ahead) goes into the entry's
// lease ahead (lease_learn_ahead()). Returns the metrics' RRL_LEASE_* event
// (REFUSED when the limit did not pass), -1: none.
int lease_call_learn(const rrl_call_limit_t& limit,
                     const rrl_limit_result_t* result, int how,
                     rrl_lease_entry_t* entry, std::int64_t redis_now_us,
                     std::int64_t sent_us, std::int64_t now_us);

// A limit of a lease zone, settled in the key's entry where exact
// (lease_settle()): a refund (A < E) into the lease that decided it
// (limit.settle_at_us is the lease's taken_at_us) while alive at now_us; a
// charge (A > E), whatever decided the request, k = min(A - E, units) from
// any lease alive (limit.settle_actual -= k). true when settled there
// (A == E, or k == A - E), false: the rest goes to Redis.
bool lease_call_settle(rrl_lease_entry_t* entry, rrl_call_limit_t& limit,
                       std::int64_t now_us);

// A lease's renewal in flight: the limit (its key copied) asking for want
// units at no cost.
class LeaseRenewal final : public BackgroundCall {
   public:
    // Renews limit's lease: one call of the script (sha) on engine (zone:
    // the limit's, for the plans). learned(arg, ...) runs once: later, from
    // the event loop (true), or at once with RRL_LEASE_CALL_UNSENT when
    // the call is not made (false). false without it for a bad algorithm;
    // throws on no memory (the entry's renewal then ends at its deadline).
    static bool start(engine::Engine& engine, std::string_view sha,
                      const rrl_call_limit_t& limit, std::uint64_t want,
                      const void* zone, std::int64_t sent_us,
                      rrl_lease_learned_pt learned, void* arg);

   private:
    // the reply decoded as a check's: passed, rejected, or failed
    void done() override;
    void learn(const rrl_limit_result_t* result, int how,
               std::int64_t redis_now_us);

    rrl_call_limit_t limit_{};
    std::string key_;        // the client's, copied
    std::string redis_key_;  // made from it
    std::int64_t sent_ = 0;
    rrl_lease_learned_pt learned_ = nullptr;
    void* arg_ = nullptr;
};

}  // namespace rrl
