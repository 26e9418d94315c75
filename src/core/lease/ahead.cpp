#include "lease/ahead.hpp"

#include <algorithm>

#include "script/algorithm.hpp"

namespace rrl {

namespace {

bool window_algorithm(const rrl_lease_limit_t& limit) {
    return limit.algorithm == RRL_FIXED_WINDOW ||
           limit.algorithm == RRL_SLIDING_WINDOW;
}

void drop_next(rrl_lease_entry_t* entry) {
    entry->next_units = 0;
    entry->next_start_us = 0;
    entry->next_end_us = 0;
    entry->next_taken_at_us = 0;
    entry->next_known = 0;
    entry->next_reset_end_us = 0;
}

}  // namespace

bool lease_should_ask_ahead(const rrl_lease_limit_t& limit,
                            const rrl_lease_entry_t& entry,
                            std::int64_t now_us) {
    if (!window_algorithm(limit) || limit.period_ms == 0 ||
        limit.period_ms > static_cast<std::uint64_t>(kLeaseAheadMaxPeriodMs)) {
        return false;
    }
    if (entry.renewing_until_us > now_us || entry.next_units != 0) {
        return false;
    }

    std::int64_t period = static_cast<std::int64_t>(limit.period_ms) * 1000;
    std::int64_t left = entry.lease_end_us - now_us;
    if (left <= RRL_LEASE_MARGIN_US || left >= period / 2) return false;

    // rate (units/s x 10^6) x horizon (us) >= 1 unit (10^12), without the
    // product: the rate only now, past the cheap conditions, as a request
    // decided from its lease runs this
    LeaseRate horizon =
        static_cast<LeaseRate>(std::min(period, kLeaseSecondUs));
    LeaseRate one = LeaseRate{kLeaseSecondUs} * kLeaseSecondUs;
    return lease_rate(entry, now_us) >= (one + horizon - 1) / horizon;
}

std::uint64_t lease_ahead_size(const rrl_lease_limit_t& limit, LeaseRate rate) {
    // at wall time 0, a window's start: the lease a request there would
    // ask; one more, for a window's demand around its rate (a last request
    // that finds none waits on Redis: no renewal is asked for less than
    // one request expected before the lease ends)
    std::uint64_t size = lease_size(limit, rate, 0);
    return size < lease_most(limit) ? size + 1 : size;
}

void lease_promote(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                   std::int64_t now_us) {
    if (entry->next_units == 0) return;
    if (!lease_same_zone(limit, *entry) || now_us >= entry->next_end_us) {
        drop_next(entry);
        return;
    }
    if (now_us < entry->next_start_us) return;

    if (now_us < entry->lease_end_us) {
        // a lease of the same window, taken before its start here
        entry->units += std::min(entry->next_units, ~entry->units);
        entry->known += std::min(entry->next_units, ~entry->known);
    } else {
        entry->units = entry->next_units;
        entry->lease_end_us = entry->next_end_us;
        entry->taken_at_us = entry->next_taken_at_us;
        entry->known = entry->next_known;
        entry->used = 0;
        entry->reset_end_us = entry->next_reset_end_us;
    }
    drop_next(entry);
}

int lease_learn_ahead(const rrl_lease_limit_t& limit, rrl_lease_entry_t* entry,
                      const rrl_limit_result_t& result, std::uint64_t granted,
                      std::int64_t ttl_us, std::int64_t redis_now_us,
                      std::int64_t sent_us, std::int64_t now_us) {
    entry->renewing_until_us = 0;
    // a debt sent meanwhile is this window's: the next one's grant owes none
    entry->owed = 0;
    if (result.passed == 0) return RRL_LEASE_REFUSED;

    if (!lease_same_zone(limit, *entry)) lease_reset_to_zone(limit, entry);

    std::int64_t period = static_cast<std::int64_t>(limit.period_ms) * 1000;
    // the time Redis had left in its window: its life is one period more
    std::int64_t before = ttl_us - period;
    if (granted == 0 || before < 0) return -1;

    // what this server's clients have left there: Redis's, and these units
    std::uint64_t remaining =
        result.remaining > 0 ? static_cast<std::uint64_t>(result.remaining) : 0;
    remaining -= std::min(remaining, granted);

    entry->next_units = granted;
    entry->next_start_us = now_us + before + RRL_LEASE_MARGIN_US;
    entry->next_end_us = sent_us + ttl_us - RRL_LEASE_MARGIN_US;
    entry->next_taken_at_us = redis_now_us + before;
    entry->next_known = remaining + granted;
    entry->next_reset_end_us =
        now_us + std::max<std::int64_t>(result.reset_after_us, 0);
    entry->end_us = std::max(entry->end_us, entry->next_end_us);
    return RRL_LEASE_RENEWED;
}

}  // namespace rrl
