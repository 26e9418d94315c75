// The C API of call_args.hpp.
#include <algorithm>
#include <cstring>
#include <memory>

#include "script/call_args.hpp"
#include "script/call_reply.hpp"
#include "script/cost.hpp"
#include "api/wrap/capi.hpp"
#include "script/delay.hpp"
#include "base/log.hpp"
#include "script/script_reply.hpp"
#include "api/rrl_call_args.h"

using rrl::capi::guarded;

static_assert(RRL_MAX_COST == rrl::max_cost && RRL_OVER_COST == rrl::over_cost);

void rrl_call_limit(rrl_call_limit_t* limit, const rrl_call_limit_t* zone,
                    uint64_t cost, const unsigned char* cost_text,
                    size_t cost_len, const unsigned char* key, size_t key_len,
                    uint64_t delay, char* redis_key) noexcept {
    *limit = *zone;
    limit->zone_limit = zone->limit;
    limit->zone_period_ms = zone->period_ms;
    limit->zone_burst = zone->burst;
    limit->cost =
        cost_text ? rrl::request_cost(
                        {reinterpret_cast<const char*>(cost_text), cost_len})
                  : cost;
    limit->key = key;
    limit->key_len = key_len;
    limit->delay = delay;
    limit->redis_key = redis_key;
    limit->redis_key_len = rrl_key_build(redis_key, zone->zone, zone->zone_len,
                                         zone->algorithm, key, key_len);
}

size_t rrl_reply_values(const rrl_call_limit_t* limits, size_t n) noexcept {
    size_t values = RRL_REPLY_HEADER;
    for (size_t i = 0; i < n; i++) {
        values += rrl::reply_width(limits[i].lease != 0,
                                   limits[i].overrides != 0);
    }
    return values;
}

int rrl_call_reply_decode(const int64_t* values, size_t nvalues,
                          rrl_call_limit_t* limits, size_t n,
                          rrl_limit_result_t* results,
                          rrl_decision_t* decision) noexcept {
    return guarded("rrl_call_reply_decode", RRL_ERROR, [&] {
        return rrl::call_reply_decode(values, nvalues, limits, n, results,
                                      decision)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

void rrl_deny_keep_shown(rrl_deny_entry_t* entry,
                         const rrl_call_limit_t* limit) noexcept {
    entry->override = limit->override;
    entry->shown_limit = limit->limit;
    entry->shown_period_ms = limit->period_ms;
    entry->shown_burst = limit->burst;
}

void rrl_deny_shown(const rrl_deny_entry_t* entry,
                    rrl_call_limit_t* limit) noexcept {
    limit->override = entry->override;
    limit->limit = entry->shown_limit;
    limit->period_ms = entry->shown_period_ms;
    limit->burst = entry->shown_burst;
}

size_t rrl_override_message(char* buf, size_t size,
                            const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_override_message", size_t{0}, [&] {
        return rrl::capi::put(rrl::invalid_override_message(limits, n), buf,
                              size);
    });
}

int64_t rrl_call_delay(const rrl_call_limit_t* limits,
                       const rrl_limit_result_t* results, size_t n, int passed,
                       uint64_t share) noexcept {
    return guarded("rrl_call_delay", int64_t{0}, [&] {
        return rrl::request_delay_us(limits, results, n, passed != 0, share);
    });
}
