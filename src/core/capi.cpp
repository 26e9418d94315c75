// The extern "C" face of the core: argument checks, and no exception ever
// crosses into nginx.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "algorithm.hpp"
#include "capi.hpp"
#include "cost.hpp"
#include "deny.hpp"
#include "fields.hpp"
#include "key.hpp"
#include "local.hpp"
#include "log.hpp"
#include "metrics.hpp"
#include "problem.hpp"
#include "rate.hpp"
#include "reply.hpp"
#include "rrl.h"

using rrl::LogLevel;
using rrl::capi::guarded;
using rrl::capi::put;

extern "C" {

int rrl_algorithm_parse(const char* name, size_t len) noexcept {
    const rrl::Algorithm* a = rrl::find_algorithm({name, len});
    return a == nullptr ? RRL_ERROR : a->id;
}

const char* rrl_algorithm_name(int algorithm) noexcept {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? nullptr : a->name.data();
}

uint64_t rrl_burst(int algorithm, uint64_t limit, uint64_t burst) noexcept {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? 0 : rrl::effective_burst(*a, limit, burst);
}

uint64_t rrl_capacity(int algorithm, uint64_t limit, uint64_t burst) noexcept {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? 0 : rrl::capacity(*a, limit, burst);
}

uint64_t rrl_max_capacity(int algorithm) noexcept {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? 0 : rrl::max_capacity(*a);
}

uint64_t rrl_state_lifetime_ms(int algorithm, uint64_t limit,
                               uint64_t period_ms, uint64_t burst) noexcept {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    if (a == nullptr || limit == 0) return UINT64_MAX;
    return rrl::state_lifetime_ms(*a, limit, period_ms, burst);
}

uint64_t rrl_cost_parse(const unsigned char* text, size_t len) noexcept {
    static_assert(RRL_MAX_COST == rrl::max_cost && RRL_OVER_COST == rrl::over_cost);
    return rrl::request_cost({reinterpret_cast<const char*>(text), len});
}

int rrl_rate_parse(const char* text, size_t len, rrl_rate_t* rate) noexcept {
    auto parsed = rrl::parse_rate({text, len});
    if (!parsed) return RRL_ERROR;
    rate->count = parsed->count;
    rate->period_ms = parsed->period_ms;
    return RRL_OK;
}

int rrl_time_parse_ms(const char* text, size_t len, uint64_t* ms) noexcept {
    auto parsed = rrl::parse_time_ms({text, len});
    if (!parsed) return RRL_ERROR;
    *ms = *parsed;
    return RRL_OK;
}

int rrl_zone_name_valid(const char* name, size_t len) noexcept {
    return rrl::zone_name_valid({name, len}) ? 1 : 0;
}

size_t rrl_key_max_len(size_t zone_len) noexcept {
    return rrl::key_max_len(zone_len);
}

size_t rrl_key_build(char* buf, const char* zone, size_t zone_len,
                     int algorithm, const unsigned char* key,
                     size_t key_len) noexcept {
    return guarded("rrl_key_build", size_t{0}, [&] {
        const rrl::Algorithm* a = rrl::algorithm(algorithm);
        if (a == nullptr) return size_t{0};
        std::string k = rrl::build_key(
            {zone, zone_len}, *a,
            {reinterpret_cast<const char*>(key), key_len});
        std::memcpy(buf, k.data(), k.size());
        return k.size();
    });
}

int rrl_reply_decode(const int64_t* values, size_t n, size_t nlimits,
                     rrl_limit_result_t* limits,
                     rrl_decision_t* decision) noexcept {
    return guarded("rrl_reply_decode", RRL_ERROR, [&] {
        std::string error;
        auto d = rrl::decode_reply(values, n, nlimits, &error);
        if (!d) {
            rrl::log(LogLevel::error, "unexpected script reply: " + error);
            return RRL_ERROR;
        }
        std::memcpy(limits, d->limits.data(),
                    nlimits * sizeof(rrl_limit_result_t));
        *decision = d->decision;
        return RRL_OK;
    });
}

int rrl_local_check(int algorithm, uint64_t limit, uint64_t period_ms,
                    uint64_t burst, uint64_t cost, int64_t now_us,
                    const rrl_local_state_t* state, rrl_local_state_t* next,
                    rrl_limit_result_t* result) noexcept {
    return guarded("rrl_local_check", RRL_ERROR, [&] {
        return rrl::local_check({algorithm, limit, period_ms, burst, cost},
                                now_us, *state, next, result)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

int64_t rrl_retry_after_seconds(int64_t retry_after_us) noexcept {
    return rrl::retry_after_seconds(retry_after_us);
}

int rrl_deny_learn(int64_t sent_us, int64_t now_us,
                   const rrl_deny_limit_t* limit,
                   const rrl_limit_result_t* result,
                   rrl_deny_entry_t* entry) noexcept {
    return rrl::deny_learn(sent_us, now_us, *limit, *result, entry) ? 1 : 0;
}

int rrl_deny_applies(const rrl_deny_entry_t* entry,
                     const rrl_deny_limit_t* limit, int64_t now_us,
                     int64_t values[RRL_REPLY_PER_LIMIT]) noexcept {
    return rrl::deny_applies(*entry, *limit, now_us, values) ? 1 : 0;
}

size_t rrl_metrics_format(const rrl_metrics_t* m, char* buf,
                          size_t size) noexcept {
    return guarded("rrl_metrics_format", size_t{0}, [&] {
        std::string out = rrl::metrics_format(*m);
        if (size > 0) {
            std::memcpy(buf, out.data(), std::min(size, out.size()));
        }
        return out.size();
    });
}

size_t rrl_ratelimit_policy(char* buf, size_t size,
                            const rrl_policy_t* policies, size_t n) noexcept {
    return guarded("rrl_ratelimit_policy", size_t{0}, [&] {
        auto v = rrl::ratelimit_policy({policies, policies + n});
        return v ? put(*v, buf, size) : 0;
    });
}

size_t rrl_ratelimit(char* buf, size_t size, const char* zone, size_t zone_len,
                     const rrl_decision_t* decision) noexcept {
    return guarded("rrl_ratelimit", size_t{0}, [&] {
        auto v = rrl::ratelimit({zone, zone_len}, decision->remaining,
                                decision->reset_after);
        return v ? put(*v, buf, size) : 0;
    });
}

size_t rrl_problem_json(char* buf, size_t size, unsigned status,
                        const rrl_policy_t* policies,
                        const rrl_limit_result_t* results, size_t n) noexcept {
    return guarded("rrl_problem_json", size_t{0}, [&] {
        std::vector<std::string_view> zones;
        for (size_t i = 0; i < n; i++) {
            if (!results[i].passed) {
                zones.emplace_back(policies[i].zone, policies[i].zone_len);
            }
        }
        return put(rrl::problem_json(status, zones), buf, size);
    });
}

}  // extern "C"
