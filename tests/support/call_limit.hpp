// One way for the tests to build an rrl_call_limit_t: by field name, never
// positionally, so that a field added to the struct shifts no value.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "api/rrl_call_args.h"

namespace rrl_test {

// A limit of zone (kept by the caller) with cost 1, no key, no delay, no
// overrides and no lease; the caller sets the rest by name.
inline rrl_call_limit_t call_limit(std::string_view zone, int algorithm,
                                   std::uint64_t n, std::uint64_t period_ms,
                                   std::uint64_t burst) {
    rrl_call_limit_t l{};
    l.zone = zone.data();
    l.zone_len = zone.size();
    l.algorithm = algorithm;
    l.limit = n;
    l.period_ms = period_ms;
    l.burst = burst;
    l.cost = 1;
    l.key = nullptr;
    l.key_len = 0;
    l.delay = RRL_DELAY_NONE;
    l.overrides = 0;
    l.override = RRL_OVERRIDE_NONE;
    l.lease = 0;
    return l;
}

// key (a C string kept by the caller) as the client's key
inline void set_key(rrl_call_limit_t& l, const char* key) {
    l.key = reinterpret_cast<const unsigned char*>(key);
    l.key_len = std::strlen(key);
}

}  // namespace rrl_test
