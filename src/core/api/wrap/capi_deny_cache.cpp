// The C API of rrl_deny_cache.h: nothing here throws.
#include "local/deny_cache.hpp"
#include "api/rrl_deny_cache.h"

int rrl_deny_usable(int dry_run, int cluster, int combined) noexcept {
    return rrl::deny_usable(dry_run != 0, cluster != 0, combined != 0) ? 1 : 0;
}

rrl_deny_limit_t rrl_deny_limit(int algorithm, uint64_t limit,
                                uint64_t period_ms, uint64_t burst,
                                uint32_t redis, uint64_t cost) noexcept {
    return rrl::deny_limit(algorithm, limit, period_ms, burst, redis, cost);
}

uint32_t rrl_deny_redis_of(const rrl_engine_conf_t* e,
                           const rrl_engine_addr_t* addrs,
                           size_t naddrs) noexcept {
    return rrl::deny_redis_of(*e, addrs, naddrs);
}

int rrl_deny_answer(const rrl_deny_entry_t* entry,
                    const rrl_deny_limit_t* limit, int64_t now_us,
                    rrl_limit_result_t* result) noexcept {
    return rrl::deny_answer(entry, *limit, now_us, *result);
}

void rrl_deny_keep_shown(rrl_deny_entry_t* entry,
                         const rrl_call_limit_t* limit) noexcept {
    rrl::deny_keep_shown(*entry, *limit);
}

void rrl_deny_shown(const rrl_deny_entry_t* entry,
                    rrl_call_limit_t* limit) noexcept {
    rrl::deny_shown(*entry, *limit);
}
