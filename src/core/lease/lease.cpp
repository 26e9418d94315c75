#include "lease/lease.hpp"

#include <algorithm>
#include <limits>

#include "lease/ahead.hpp"
#include "script/algorithm.hpp"

namespace rrl {

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr LeaseRate kRateMax = ~LeaseRate{0};
constexpr LeaseRate kUsPerSecond = 1000000;

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) {
    return a > kU64Max - b ? kU64Max : a + b;
}

LeaseRate mul_sat(LeaseRate a, LeaseRate b) {
    return a != 0 && b > kRateMax / a ? kRateMax : a * b;
}

std::int64_t to_i64(std::uint64_t v) {
    return v > static_cast<std::uint64_t>(kI64Max)
               ? kI64Max
               : static_cast<std::int64_t>(v);
}

// The entry matters while its leases are usable, and while its demand
// counts.
void extend_end(rrl_lease_entry_t* entry) {
    entry->end_us =
        std::max({entry->end_us, entry->lease_end_us, entry->next_end_us,
                  entry->seen_since_us + 2 * kLeaseSecondUs});
}

void count_demand(rrl_lease_entry_t* entry, std::uint64_t cost,
                  std::int64_t now_us) {
    lease_roll(entry, now_us);
    entry->seen_cur = add_sat(entry->seen_cur, cost);
    extend_end(entry);
}

bool usable(const rrl_lease_limit_t& limit, const rrl_lease_entry_t* entry,
            std::uint64_t cost, std::int64_t now_us) {
    return entry != nullptr && lease_same_zone(limit, *entry) &&
           now_us < entry->lease_end_us && entry->units >= cost;
}

// The sum of the costs of the limits before limit i on the same entry
// (a zone twice in a request, on the same key), and limit i's own.
std::uint64_t cost_on_entry(const rrl_lease_limit_t* limits,
                            rrl_lease_entry_t* const* entries, std::size_t i) {
    std::uint64_t cost = 0;
    for (std::size_t j = 0; j <= i; j++) {
        if (entries[j] == entries[i]) cost = add_sat(cost, limits[j].cost);
    }
    return cost;
}

bool should_renew(const rrl_lease_limit_t& limit,
                  const rrl_lease_entry_t& entry, std::int64_t now_us) {
    if (entry.renewing_until_us > now_us) return false;
    if (entry.units >= lease_most(limit)) return false;

    LeaseRate rate = lease_rate(entry, now_us);
    LeaseRate units = entry.units;
    LeaseRate scale = kUsPerSecond * kUsPerSecond;

    // one left at least: the next request is served while the renewal is
    // in flight, rather than racing it to Redis for the key's last units
    bool low =
        units <= 1 || mul_sat(units, scale) < mul_sat(rate, kLeaseLowWaterUs);
    if (!low) return false;

    std::int64_t left = entry.lease_end_us - now_us;
    if (left <= 0) return false;
    return mul_sat(rate, static_cast<LeaseRate>(left)) >=
           mul_sat(units + 1, scale);
}

}  // namespace

void lease_reset_to_zone(const rrl_lease_limit_t& limit,
                         rrl_lease_entry_t* entry) {
    std::int64_t end = entry->end_us;
    *entry = rrl_lease_entry_t{};
    entry->end_us = end;
    entry->limit = limit.limit;
    entry->period_ms = limit.period_ms;
    entry->burst = limit.burst;
    entry->algorithm = limit.algorithm;
}

bool lease_same_zone(const rrl_lease_limit_t& limit,
                     const rrl_lease_entry_t& entry) {
    return entry.algorithm == limit.algorithm && entry.limit == limit.limit &&
           entry.period_ms == limit.period_ms && entry.burst == limit.burst;
}

void lease_roll(rrl_lease_entry_t* entry, std::int64_t now_us) {
    std::int64_t elapsed = now_us - entry->seen_since_us;

    if (elapsed < 0 || elapsed >= 2 * kLeaseSecondUs) {
        entry->seen_prev = 0;
        entry->seen_cur = 0;
        entry->seen_since_us = now_us;
    } else if (elapsed >= kLeaseSecondUs) {
        entry->seen_prev = entry->seen_cur;
        entry->seen_cur = 0;
        entry->seen_since_us += kLeaseSecondUs;
    }
}

LeaseRate lease_rate(const rrl_lease_entry_t& entry, std::int64_t now_us) {
    rrl_lease_entry_t e = entry;
    lease_roll(&e, now_us);

    LeaseRate elapsed = static_cast<LeaseRate>(now_us - e.seen_since_us);
    return LeaseRate{e.seen_prev} * (kUsPerSecond - elapsed) +
           LeaseRate{e.seen_cur} * kUsPerSecond;
}

std::int64_t lease_left_us(const rrl_lease_limit_t& limit,
                           std::int64_t wall_us) {
    if (limit.algorithm == RRL_TOKEN_BUCKET) return RRL_LEASE_TOKEN_BUCKET_US;

    if (limit.period_ms == 0 || limit.period_ms > RRL_MAX_STATE_MS) return 0;

    std::int64_t period = static_cast<std::int64_t>(limit.period_ms) * 1000;
    std::int64_t into = wall_us % period;
    if (into < 0) into += period;
    return period - into;
}

std::uint64_t lease_capacity(const rrl_lease_limit_t& limit) {
    const Algorithm* a = algorithm(limit.algorithm);
    return a != nullptr ? capacity(*a, limit.limit, limit.burst) : 0;
}

std::uint64_t lease_most(const rrl_lease_limit_t& limit) {
    std::uint64_t capacity = lease_capacity(limit);
    std::uint64_t percent = std::min(limit.percent, 100u);
    // in 64 bits where the product fits, as it does for every real zone: a
    // lease decision runs this on each request, and a 128-bit division is a
    // call of its own
    LeaseRate most = capacity <= UINT64_MAX / 100
                         ? LeaseRate{capacity * percent / 100}
                         : LeaseRate{capacity} * percent / 100;
    return most < 1 ? 1 : static_cast<std::uint64_t>(most);
}

std::uint64_t lease_size(const rrl_lease_limit_t& limit, LeaseRate rate,
                         std::int64_t wall_us) {
    LeaseRate most = lease_most(limit);

    LeaseRate horizon = static_cast<LeaseRate>(std::clamp(
        lease_left_us(limit, wall_us), std::int64_t{0}, kLeaseSecondUs));
    LeaseRate scale = kUsPerSecond * kUsPerSecond;
    LeaseRate product = mul_sat(rate, horizon);
    LeaseRate size = product / scale + (product % scale != 0 ? 1 : 0);

    size = std::clamp(size, LeaseRate{1}, most);
    return size > kU64Max ? kU64Max : static_cast<std::uint64_t>(size);
}

int lease_decide(const rrl_lease_limit_t* limits,
                 rrl_lease_entry_t* const* entries, std::size_t n,
                 std::int64_t now_us, std::int64_t renew_timeout_us,
                 rrl_limit_result_t* results, int* renew) {
    if (n == 0) return 0;

    for (std::size_t i = 0; i < n; i++) {
        if (entries[i] != nullptr) lease_promote(limits[i], entries[i], now_us);
    }
    for (std::size_t i = 0; i < n; i++) {
        if (!usable(limits[i], entries[i], cost_on_entry(limits, entries, i),
                    now_us)) {
            return 0;
        }
    }

    for (std::size_t i = 0; i < n; i++) {
        rrl_lease_entry_t* e = entries[i];
        std::uint64_t cost = limits[i].cost;

        e->units -= cost;
        e->used = add_sat(e->used, cost);
        count_demand(e, cost, now_us);

        std::int64_t reset = e->reset_end_us - now_us;
        // answers of calls in flight together land in any order: known
        // may count a later grant's units on an earlier remaining, so it
        // is never shown above what a pass can leave
        std::uint64_t shown = e->known > e->used ? e->known - e->used : 0;
        std::uint64_t capacity = lease_capacity(limits[i]);
        shown = std::min(shown, capacity > cost ? capacity - cost : 0);
        results[i] = {1, to_i64(shown), reset > 0 ? reset : 0, 0};
    }

    // after every limit's consumption: a zone twice on one key renews once
    for (std::size_t i = 0; i < n; i++) {
        rrl_lease_entry_t* e = entries[i];
        renew[i] = should_renew(limits[i], *e, now_us) ? kLeaseRenew
                   : lease_should_ask_ahead(limits[i], *e, now_us)
                       ? kLeaseRenewAhead
                       : 0;
        if (renew[i] != 0) e->renewing_until_us = now_us + renew_timeout_us;
    }
    return 1;
}

void lease_want(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                std::int64_t now_us, std::int64_t wall_us, std::uint64_t* want,
                std::uint64_t* back, std::int64_t* back_at) {
    *back = 0;
    *back_at = 0;

    if (entry == nullptr) {
        *want = add_sat(limit.cost, 1);
        return;
    }

    // new in the table (made by this ask): as none, no demand counted yet,
    // so that its first renewal takes no more than one unit ahead and the
    // key's last units are not leased while a request may race it to Redis
    bool never_seen = entry->limit == 0;
    if (!lease_same_zone(limit, *entry)) lease_reset_to_zone(limit, entry);
    lease_promote(limit, entry, now_us);

    // sized on the demand so far, as a key never seen gets 1: the cost is
    // asked for on its own
    std::uint64_t size = lease_size(limit, lease_rate(*entry, now_us), wall_us);
    count_demand(entry, never_seen ? 0 : limit.cost, now_us);
    lease_take_back(limit, entry, now_us, back, back_at);

    // a server holds at most the largest lease: the undershoot's bound
    std::uint64_t most = lease_most(limit);
    if (now_us < entry->lease_end_us) {
        size = entry->units >= most ? 0 : std::min(size, most - entry->units);
    }

    *want = add_sat(limit.cost, size);
}

void lease_take_back(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                     std::int64_t now_us, std::uint64_t* back,
                     std::int64_t* back_at) {
    *back = 0;
    *back_at = 0;
    if (entry == nullptr || !lease_same_zone(limit, *entry)) return;

    if (now_us >= entry->lease_end_us && entry->units > 0) {
        if (limit.algorithm != RRL_FIXED_WINDOW) {
            *back = entry->units;
            *back_at = entry->taken_at_us;
        }
        entry->units = 0;
    }
}

void lease_untake_back(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                       std::uint64_t back, std::int64_t back_at,
                       std::int64_t now_us) {
    // a grant since made another lease: the units stay taken (strict)
    if (back == 0 || !lease_same_zone(limit, *entry) ||
        entry->taken_at_us != back_at || now_us < entry->lease_end_us) {
        return;
    }
    entry->units = add_sat(entry->units, back);
}

int lease_learn(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                const rrl_limit_result_t& result, std::uint64_t granted,
                std::int64_t ttl_us, std::int64_t redis_now_us,
                std::int64_t sent_us, std::int64_t now_us, bool owner) {
    if (result.passed == 0) {
        if (limit.cost == 0) entry->renewing_until_us = 0;
        if (owner) entry->owed = 0;
        return RRL_LEASE_REFUSED;
    }

    if (!lease_same_zone(limit, *entry)) lease_reset_to_zone(limit, entry);
    lease_promote(limit, entry, now_us);

    std::uint64_t extra = granted > limit.cost ? granted - limit.cost : 0;
    // a debt sent to Redis after this grant was counted: its units first
    if (owner) {
        extra -= std::min(extra, entry->owed);
        entry->owed = 0;
    }
    std::int64_t end = sent_us + ttl_us - RRL_LEASE_MARGIN_US;
    int event;

    if (end <= now_us && now_us < entry->lease_end_us) {
        // ended on arrival, beside a lease alive, which is then another
        // window's (a call sent at its window's end, answered after the
        // next one's lease began here): its units lapse. Merged, the lease
        // would end with them, and give them back as of its own time.
        if (limit.cost == 0) entry->renewing_until_us = 0;
        return RRL_LEASE_TAKEN;
    }
    if (now_us < entry->lease_end_us) {
        entry->units = add_sat(entry->units, extra);
        entry->lease_end_us = std::min(entry->lease_end_us, end);
        event = RRL_LEASE_RENEWED;
    } else {
        entry->units = extra;
        entry->lease_end_us = end;
        entry->taken_at_us = redis_now_us;
        event = RRL_LEASE_TAKEN;
    }

    // the decoded remaining counts this grant's extra units as this
    // server's (call_reply_decode()); known counts every unit it holds
    std::uint64_t remaining =
        result.remaining > 0 ? static_cast<std::uint64_t>(result.remaining) : 0;
    remaining -= std::min(remaining, extra);
    entry->known = add_sat(remaining, entry->units);
    entry->used = 0;
    entry->reset_end_us =
        now_us + std::max<std::int64_t>(result.reset_after_us, 0);
    if (limit.cost == 0) entry->renewing_until_us = 0;
    entry->end_us = std::max({entry->lease_end_us, entry->next_end_us,
                              entry->seen_since_us + 2 * kLeaseSecondUs});
    return event;
}

void lease_renewal_failed(rrl_lease_entry_t* entry) {
    entry->renewing_until_us = 0;
    entry->owed = 0;
}

bool lease_settle(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                  std::uint64_t cost, std::uint64_t& actual,
                  std::int64_t taken_at_us, std::int64_t now_us) {
    if (entry == nullptr || !lease_same_zone(limit, *entry)) return false;
    lease_promote(limit, entry, now_us);

    bool alive = now_us < entry->lease_end_us;

    if (actual < cost) {
        if (!alive || entry->taken_at_us != taken_at_us) return false;
        std::uint64_t refund = cost - actual;
        entry->units = add_sat(entry->units, refund);
        entry->used -= std::min(entry->used, refund);
        return true;
    }

    // the units held are counted in Redis already: using them up is exact
    std::uint64_t charge = actual - cost;
    std::uint64_t taken = alive ? std::min(charge, entry->units) : 0;
    entry->units -= taken;
    entry->used = add_sat(entry->used, taken);
    actual -= taken;
    // the rest goes to Redis; a grant in flight was counted without it
    if (taken < charge && entry->renewing_until_us > now_us) {
        entry->owed = add_sat(entry->owed, charge - taken);
    }
    return taken == charge;
}

}  // namespace rrl
