// The C API of rrl_lease.h: nothing here throws.
#include "api/wrap/capi.hpp"
#include "lease/lease.hpp"
#include "api/rrl_lease.h"

using rrl::capi::guarded;

int rrl_lease_decide(const rrl_lease_limit_t* limits,
                     rrl_lease_entry_t* const* entries, size_t n,
                     int64_t now_us, int64_t renew_timeout_us,
                     rrl_limit_result_t* results, int* renew) noexcept {
    return guarded("rrl_lease_decide", 0, [&] {
        return rrl::lease_decide(limits, entries, n, now_us, renew_timeout_us,
                                 results, renew);
    });
}

void rrl_lease_want(const rrl_lease_limit_t* limit, rrl_lease_entry_t* entry,
                    int64_t now_us, int64_t wall_us, uint64_t* want,
                    uint64_t* back, int64_t* back_at) noexcept {
    rrl::lease_want(*limit, entry, now_us, wall_us, want, back, back_at);
}

int rrl_lease_learn(const rrl_lease_limit_t* limit, rrl_lease_entry_t* entry,
                    const rrl_limit_result_t* result, uint64_t granted,
                    int64_t ttl_us, int64_t redis_now_us, int64_t sent_us,
                    int64_t now_us) noexcept {
    return rrl::lease_learn(*limit, entry, *result, granted, ttl_us,
                            redis_now_us, sent_us, now_us);
}

void rrl_lease_renewal_failed(rrl_lease_entry_t* entry) noexcept {
    rrl::lease_renewal_failed(entry);
}
