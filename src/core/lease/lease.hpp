// The lease table's rules (lease=P%): each nginx server holds per key a
// lease, units taken from the key's Redis state at once; requests consume
// them here without Redis, one worker renews in the background, and the
// units left of an ended lease are given back where exact. Here: when a
// request is decided from its keys' leases, how many units a call to Redis
// asks for, what a reply puts into an entry, and when a worker renews a
// lease in the background (on a request's call limits: lease_call.hpp).
//
// All *_us times are the shim's monotonic clock, except taken_at_us
// (Redis's time) and wall_us (the wall clock, us since the epoch: Redis's
// windows are aligned on it).
//
// Demand. An entry counts the units asked for its key (a request's cost,
// whether decided from the lease or sent to Redis; a renewal asks nothing)
// in one-second steps of the monotonic clock: seen_cur since seen_since_us,
// seen_prev in the second before. When a second is over, cur becomes prev
// (seen_since_us moves on by 1 s); after two, both are 0 and the second
// starts now. The rate, in units/s, weighs the second before by what is
// left of it:
//
//     rate = seen_prev x (1 - elapsed / 1 s) + seen_cur,
//     elapsed = now - seen_since_us
//
// Sizing. A call asks for want = cost + size units, a renewal for size:
//
//     left  = the time until the lease would end: period - wall_us mod
//             period for fixed_window and sliding_window (Redis's windows
//             are aligned on the epoch), RRL_LEASE_TOKEN_BUCKET_US (100 ms)
//             for token_bucket
//     cap   = N + burst (fixed_window, sliding_window), burst (token_bucket)
//     size  = clamp(ceil(rate x min(1 s, left)), 1, max(1, floor(cap x P /
//             100)))
//
// all in exact integer arithmetic. A key never seen gets 1.
//
// Renewal. After a request decided from the leases, a limit is renewed in
// the background when all three hold:
//   - units < rate x 50 ms, or at most one left: running low (one left
//     serves the next request while the renewal is in flight);
//   - rate x (lease_end - now) >= 1 + units: more demand is expected before
//     the lease ends than it has left (none is asked for a lease about to
//     end on a quiet key);
//   - no renewal in flight (renewing_until_us not after now).
// Else, for fixed_window and sliding_window, it may ask ahead for the next
// window's lease (ahead.hpp).
//
// Giving back. The units left of an ended lease go back with the next call
// to Redis for the key (B, with T = taken_at_us), for sliding_window and
// token_bucket; a fixed_window's window has ended with its lease, so they
// are lost: this server's share of the undershoot. The units of another
// zone's entry (a reload changed the zone's numbers) are not given back
// either: they were taken under other numbers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/rrl_lease_types.h"

namespace rrl {

constexpr std::int64_t kLeaseSecondUs = 1000000;
constexpr std::int64_t kLeaseLowWaterUs = 50000;  // renew below 50 ms' worth

// lease_decide()'s renewals
constexpr int kLeaseRenew = 1;       // this window's lease
constexpr int kLeaseRenewAhead = 2;  // the next window's (ahead.hpp)

// The rate of an entry's demand, in units per second x 1,000,000 (exact).
using LeaseRate = unsigned __int128;

// The entry as a new one of this limit's zone (zeroed, its numbers), its
// end kept.
void lease_reset_to_zone(const rrl_lease_limit_t& limit,
                         rrl_lease_entry_t* entry);

// 1 when the entry was made for this limit's zone (its numbers).
bool lease_same_zone(const rrl_lease_limit_t& limit,
                     const rrl_lease_entry_t& entry);

// Rolls the entry's seconds on to now_us (see above).
void lease_roll(rrl_lease_entry_t* entry, std::int64_t now_us);

// The rate at now_us (after rolling): units/s x 1,000,000.
LeaseRate lease_rate(const rrl_lease_entry_t& entry, std::int64_t now_us);

// The time until a lease taken at wall_us would end, in us.
std::int64_t lease_left_us(const rrl_lease_limit_t& limit,
                           std::int64_t wall_us);

// The size of the next lease at this rate (see above).
// the largest lease: P% of the capacity, at least 1; a server never
// holds more of a key (the undershoot's bound: servers x this)
std::uint64_t lease_most(const rrl_lease_limit_t& limit);

// the most units a key's state holds: the algorithm's capacity()
std::uint64_t lease_capacity(const rrl_lease_limit_t& limit);

std::uint64_t lease_size(const rrl_lease_limit_t& limit, LeaseRate rate,
                         std::int64_t wall_us);

// Decides a request of n limits at now_us from its keys' entries
// (entries[i] nullptr or an entry of the table): 1 when every limit's entry
// is usable (the same zone's numbers, now_us < lease_end_us, units >=
// cost): consumes each limit's cost (units -= cost, used += cost), counts
// the demand, and writes each limit's result into results[i] (passed,
// known - used (>= 0, at most what a pass leaves), the time until
// reset_end_us, no retry); renew[i] = kLeaseRenew for each limit to
// renew now, kLeaseRenewAhead to ask ahead for the next window's
// lease (ahead.hpp; both set its renewing_until_us to now_us +
// renew_timeout_us), else 0. A lease ahead whose time has come is the
// entry's lease first (lease_promote()). 0: not decided, nothing changed
// but promotions.
int lease_decide(const rrl_lease_limit_t* limits,
                 rrl_lease_entry_t* const* entries, std::size_t n,
                 std::int64_t now_us, std::int64_t renew_timeout_us,
                 rrl_limit_result_t* results, int* renew);

// For a call to Redis of a limit (cost 0: a renewal): counts the demand,
// *want = cost + the lease's size; *back and *back_at: the units left of an
// ended lease and Redis's time it was taken (0 and 0 for none, and always
// for fixed_window, whose window has moved on), then the entry's units are
// 0. entry nullptr: a key never seen (size 1, nothing back).
void lease_want(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                std::int64_t now_us, std::int64_t wall_us, std::uint64_t* want,
                std::uint64_t* back, std::int64_t* back_at);

// lease_want()'s giving back alone: an ended lease's units (none for
// fixed_window, nor another zone's entry) go with the call, the entry's
// units are 0. No demand is counted: a call that asks for no lease.
void lease_take_back(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                     std::int64_t now_us, std::uint64_t* back,
                     std::int64_t* back_at);

// The units lease_take_back() took, back into the entry, for a call never
// sent: while it is the same lease (taken_at_us), ended, of the zone.
void lease_untake_back(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                       std::uint64_t back, std::int64_t back_at,
                       std::int64_t now_us);

// After a reply that passed the limit with granted units G and the lease's
// lifetime ttl_us (from redis_now_us, Redis's time; the call was sent at
// sent_us): puts G - cost into the entry, a new lease (RRL_LEASE_TAKEN) or
// added to the one alive (RRL_LEASE_RENEWED), and what the reply showed;
// RRL_LEASE_REFUSED for a reply that did not pass. Returns the event.
// owner: the call's grant is the one in flight for the key, which owes the
// entry's debt (lease_settle()); another call's grant owes nothing. A grant
// that has ended when it lands, beside a lease alive (then another
// window's: the lease ahead became it meanwhile), lapses: RRL_LEASE_TAKEN,
// the lease unchanged.
int lease_learn(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                const rrl_limit_result_t& result, std::uint64_t granted,
                std::int64_t ttl_us, std::int64_t redis_now_us,
                std::int64_t sent_us, std::int64_t now_us, bool owner = true);

// A renewal failed or was refused: none in flight any more, nor its debt.
void lease_renewal_failed(rrl_lease_entry_t* entry);

// Settlement (settle=VALUE) of a limit of cost E, actual cost A, in the
// key's entry where exact; true: settled there, false: go to Redis. A
// refund puts E - A back into the units of the lease taken at taken_at_us
// (used less by as much, at least 0), as if never taken, while that lease
// is the one alive. A charge, whatever decided the request, takes
// k = min(A - E, units) from any lease alive (the zone's numbers, now_us
// before its end): actual -= k, settled there when k == A - E. The units
// then go on as any: to requests, or given back to Redis at the lease's end.
// What a charge leaves for Redis while a grant is in flight for the key
// (renewing_until_us) is owed by that grant: it was counted before the
// debt, and lease_learn() takes the owed units out of it (strict).
bool lease_settle(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                  std::uint64_t cost, std::uint64_t& actual,
                  std::int64_t taken_at_us, std::int64_t now_us);

}  // namespace rrl
