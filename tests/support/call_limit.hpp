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

#include "base/log.hpp"
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

// the integers of the script's reply to a check of these limits
inline std::size_t reply_values(const rrl_call_limit_t* limits, std::size_t n) {
    std::size_t values = RRL_REPLY_HEADER;
    for (std::size_t i = 0; i < n; i++) {
        values +=
            rrl::reply_width(limits[i].lease != 0, limits[i].overrides != 0);
    }
    return values;
}

// rrl::decode_reply() into results and *decision: RRL_OK, or RRL_ERROR
// (logged, as Request::decode_local() does)
inline int reply_decode(const std::int64_t* values, std::size_t n,
                        std::size_t nlimits, rrl_limit_result_t* results,
                        rrl_decision_t* decision) {
    std::string error;
    auto d = rrl::decode_reply(values, n, nlimits, &error);
    if (!d) {
        rrl::log(rrl::LogLevel::error, "unexpected script reply: " + error);
        return RRL_ERROR;
    }
    std::copy(d->limits.begin(), d->limits.end(), results);
    *decision = d->decision;
    return RRL_OK;
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

// rrl::invalid_override_message(), as snprintf writes: its whole length,
// written only when it fits
inline std::size_t override_message(char* buf, std::size_t size,
                                    const rrl_call_limit_t* limits,
                                    std::size_t n) {
    std::string m = rrl::invalid_override_message(limits, n);
    if (buf != nullptr && m.size() <= size)
        std::memcpy(buf, m.data(), m.size());
    return m.size();
}

}  // namespace rrl_test
