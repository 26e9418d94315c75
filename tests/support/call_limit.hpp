// One way for the tests to build an rrl_call_limit_t: by field name, never
// positionally, so that a field added to the struct shifts no value. And
// the request's rules on such limits (decide/request.hpp, call_reply.hpp,
// script_reply.hpp, delay.hpp) in the form the tests check them: codes,
// and out-parameters.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "api/wrap/capi.hpp"
#include "base/rrl_call_args_types.h"
#include "decide/request.hpp"
#include "script/call_args.hpp"
#include "script/call_reply.hpp"
#include "script/delay.hpp"
#include "script/script_reply.hpp"

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

// rrl::call_limit() into *l: zone's limit with this cost (cost_text, the
// evaluated cost=$VAR's: nullptr for cost), key and delay
inline void request_limit(rrl_call_limit_t* l, const rrl_call_limit_t* zone,
                          std::uint64_t cost, const unsigned char* cost_text,
                          std::size_t cost_len, const unsigned char* key,
                          std::size_t key_len, std::uint64_t delay,
                          char* redis_key) {
    std::string_view text(reinterpret_cast<const char*>(cost_text), cost_len);
    *l = rrl::call_limit(*zone, cost, cost_text ? &text : nullptr,
                         {reinterpret_cast<const char*>(key), key_len}, delay,
                         redis_key);
}

// rrl::reply_values() of these limits (0: an unknown algorithm)
inline std::size_t reply_values(const rrl_call_limit_t* limits, std::size_t n) {
    rrl::CallLimits l;
    return rrl::to_call_limits(limits, n, l) ? rrl::reply_values(l.data(), n)
                                             : 0;
}

// rrl::decode_reply_into(): RRL_OK, or RRL_ERROR (logged)
inline int reply_decode(const std::int64_t* values, std::size_t n,
                        std::size_t nlimits, rrl_limit_result_t* results,
                        rrl_decision_t* decision) {
    return rrl::decode_reply_into(values, n, nlimits, results, decision)
               ? RRL_OK
               : RRL_ERROR;
}

// rrl::call_reply_decode(): RRL_OK, or RRL_ERROR
inline int call_reply_decode(const std::int64_t* values, std::size_t nvalues,
                             rrl_call_limit_t* limits, std::size_t n,
                             rrl_limit_result_t* results,
                             rrl_decision_t* decision) {
    return rrl::call_reply_decode(values, nvalues, limits, n, results, decision)
               ? RRL_OK
               : RRL_ERROR;
}

// rrl::request_delay_us()
inline std::int64_t call_delay(const rrl_call_limit_t* limits,
                               const rrl_limit_result_t* results, std::size_t n,
                               int passed, std::uint64_t share) {
    return rrl::request_delay_us(limits, results, n, passed != 0, share);
}

// rrl::invalid_override_message() as the C API writes it
// (rrl_request_override_message(): rrl::capi::put(), as snprintf does)
inline std::size_t override_message(char* buf, std::size_t size,
                                    const rrl_call_limit_t* limits,
                                    std::size_t n) {
    return rrl::capi::put(rrl::invalid_override_message(limits, n), buf, size);
}

}  // namespace rrl_test
