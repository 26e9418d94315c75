// The C API of rrl_local_zone.h.
#include "script/algorithm.hpp"
#include "api/wrap/capi.hpp"
#include "local/local_zone.hpp"
#include "api/rrl_local_zone.h"

using rrl::capi::guarded;

rrl_local_limit_t rrl_local_limit(const rrl_call_limit_t* zone_limit,
                                  uint64_t cost) noexcept {
    rrl_local_limit_t l{};
    l.algorithm = zone_limit->algorithm;
    l.limit = zone_limit->limit;
    l.period_ms = zone_limit->period_ms;
    l.burst = zone_limit->burst;
    l.cost = cost;
    l.entry = nullptr;
    return l;
}

size_t rrl_local_zone_decide(const rrl_local_limit_t* limits, size_t n,
                             uint64_t share, int64_t now_us,
                             rrl_local_entry_t* next,
                             int64_t* values) noexcept {
    return guarded("rrl_local_zone_decide", size_t{0}, [&] {
        return rrl::local_zone_decide(limits, n, share, now_us, next, values);
    });
}
