// Leases ahead (fixed_window, sliding_window): a key whose lease runs in
// the second half of its window takes the next window's lease before that
// window starts, so that its first requests there are decided here rather
// than waiting on Redis. Redis counts those units as the next window's
// from the moment they are granted ("0:W:0:0:1": see ratelimit.lua): the
// limit stays strict.
//
// Asking. After a request decided from a lease, one worker asks ahead, in
// the background, when all hold:
//   - the algorithm is fixed_window or sliding_window, its period at most
//     a day (a day's first request may well wait on Redis);
//   - no renewal is in flight, no lease ahead is held;
//   - the lease alive ends (with its window) in less than half a period,
//     and in more than RRL_LEASE_MARGIN_US (an ask that reaches Redis
//     after the window turns takes the window after, of no use);
//   - demand is expected in the next window: rate x min(1 s, period) >= 1.
// It asks for the size of a lease taken at the next window's start, and
// one more, up to the largest lease: clamp(ceil(rate x min(1 s, period)),
// 1, most), + 1 while below most. A window's demand varies around its
// rate, and no renewal is asked for less than one request expected before
// the lease ends: without the one more, a key whose lease is sized to its
// rate sends its window's last request to Redis one window in two.
//
// Keeping. The grant's life runs to the end of the next window (Redis's
// time); the entry keeps it apart, usable from that window's start on
// this clock: no earlier than the reply's arrival plus the time Redis had
// left in its window, plus RRL_LEASE_MARGIN_US; until the call's sending
// plus its life, less RRL_LEASE_MARGIN_US.
//
// Promotion. From its start, the lease ahead becomes the entry's lease
// (its units, its end, Redis's time of its window's start as taken_at_us,
// what its reply showed), at the first look at the entry: a lease alive
// then (taken at that window's start, before the start here) gets its
// units added. The units left of the lease it follows are not given back
// (this server's share of the undershoot, as fixed_window's always are).
// A lease ahead past its end, or of another zone's numbers, is dropped.
#pragma once

#include <cstdint>

#include "base/rrl_lease_types.h"
#include "lease/lease.hpp"

namespace rrl {

// the longest period a lease is taken ahead for
constexpr std::int64_t kLeaseAheadMaxPeriodMs = 86400000;

// Whether a worker should ask ahead for the entry's next window now (see
// above), after a request decided from its lease at now_us.
bool lease_should_ask_ahead(const rrl_lease_limit_t& limit,
                            const rrl_lease_entry_t& entry,
                            std::int64_t now_us);

// The units to ask ahead for at this rate (see above).
std::uint64_t lease_ahead_size(const rrl_lease_limit_t& limit, LeaseRate rate);

// The lease ahead becomes the entry's lease when its time has come, is
// dropped when past or of another zone; else nothing changes.
void lease_promote(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                   std::int64_t now_us);

// A reply to an ask ahead that passed with G units (G > 0) and the life
// ttl_us (from redis_now_us; sent at sent_us) into the entry's lease
// ahead; RRL_LEASE_REFUSED for one that did not pass. The renewal is over
// either way. Returns the metrics' event: RRL_LEASE_RENEWED for a grant.
int lease_learn_ahead(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                      const rrl_limit_result_t& result, std::uint64_t granted,
                      std::int64_t ttl_us, std::int64_t redis_now_us,
                      std::int64_t sent_us, std::int64_t now_us);

}  // namespace rrl
