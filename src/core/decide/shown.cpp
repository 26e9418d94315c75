#include "decide/shown.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "script/algorithm.hpp"
#include "decide/decision.hpp"
#include "decide/fields.hpp"
#include "local/local_zone.hpp"
#include "decide/problem.hpp"

namespace rrl {

namespace {

std::string_view zone_of(const rrl_call_limit_t& l) {
    return {l.zone, l.zone_len};
}

// ms with 3 decimals, as $upstream_response_time has them for s
std::string milliseconds(std::int64_t us) {
    us = std::max<std::int64_t>(us, 0);
    std::string frac = std::to_string(us % 1000);
    return std::to_string(us / 1000) + "." + std::string(3 - frac.size(), '0') +
           frac;
}

// The limit as the headers show it: this server's share of it, or whole.
rrl_policy_t policy_of(const rrl_call_limit_t& l, const rrl_shown_t& shown) {
    rrl_policy_t p{l.zone,  l.zone_len,  l.algorithm,
                   l.limit, l.period_ms, l.burst};
    if (shown.show & show::local_limits) {
        LocalShare s =
            local_share(l.algorithm, l.limit, l.burst, shown.local_share);
        p.limit = s.limit;
        p.burst = s.burst;
    }
    return p;
}

// X-RateLimit-Limit: the most one request may cost, on an idle key; none
// for a blocked one (a leaky bucket's would be burst + 1)
std::uint64_t capacity_of(const rrl_policy_t& p, int override) {
    const Algorithm* a = algorithm(p.algorithm);
    if (a == nullptr || override == RRL_OVERRIDE_BLOCK) return 0;
    return capacity(*a, p.limit, p.burst);
}

// An unlimited override's limit is not shown.
bool is_shown(const rrl_call_limit_t& l) {
    return l.override != RRL_OVERRIDE_UNLIMITED;
}

// Whether the request shows a limit: decided, and not every limit
// unlimited.
bool shows_limit(const rrl_shown_t& shown) {
    return shown.decided &&
           std::any_of(shown.limits, shown.limits + shown.nlimits, is_shown);
}

// Whether the request's units were charged up front: it passed (dry run
// too), or the local zone passed it.
bool charged(const rrl_shown_t& shown) {
    switch (static_cast<Status>(shown.status)) {
        case Status::passed:
        case Status::delayed:
        case Status::delayed_dry_run:
        case Status::failed_local:
            return shows_limit(shown) && shown.decision->passed;
        default:
            return false;
    }
}

}  // namespace

Fields shown_fields(const rrl_shown_t& shown) {
    if (!shows_limit(shown)) return {};

    const rrl_decision_t& d = *shown.decision;
    const rrl_call_limit_t& reported = shown.limits[d.reported];
    Fields fields;

    if (shown.show & show::legacy) {
        fields.push_back({"X-RateLimit-Limit",
                          std::to_string(capacity_of(policy_of(reported, shown),
                                                     reported.override))});
        fields.push_back(
            {"X-RateLimit-Remaining", std::to_string(d.remaining)});
        fields.push_back({"X-RateLimit-Reset", std::to_string(d.reset_unix)});
    }

    if (shown.show & show::draft) {
        SmallVector<rrl_policy_t, 8> policies;
        for (std::size_t i = 0; i < shown.nlimits; i++) {
            if (is_shown(shown.limits[i])) {
                policies.push_back(policy_of(shown.limits[i], shown));
            }
        }
        auto policy = ratelimit_policy(policies.data(), policies.size());
        auto ratelimit_field =
            ratelimit(zone_of(reported), d.remaining, d.reset_after);
        if (!policy || !ratelimit_field) return {};
        fields.push_back({"RateLimit-Policy", *policy});
        fields.push_back({"RateLimit", *ratelimit_field});
    }

    if (shown.show & show::retry_after) {
        fields.push_back({"Retry-After", std::to_string(d.retry_after)});
    }

    return fields;
}

const char* shown_variable_name(int variable) {
    static const char* const names[] = {
        "redis_ratelimit_status", "redis_ratelimit_remaining",
        "redis_ratelimit_reset",  "redis_ratelimit_zone",
        "redis_ratelimit_rtt",    "redis_ratelimit_delay",
        "redis_ratelimit_cost"};
    if (variable < 0 || variable >= static_cast<int>(std::size(names))) {
        return nullptr;
    }
    return names[variable];
}

std::optional<std::string> shown_variable(int variable,
                                          const rrl_shown_t& shown) {
    if (variable == RRL_VAR_STATUS) {
        if (shown.status == 0) return std::nullopt;
        return std::string(status_text(static_cast<Status>(shown.status)));
    }

    if (variable == RRL_VAR_RTT) {
        if (!shown.replied) return std::nullopt;
        return milliseconds(shown.rtt_us);
    }

    if (variable == RRL_VAR_DELAY) {
        if (shown.delay_us <= 0) return std::nullopt;
        return milliseconds(shown.delay_us);
    }

    if (variable == RRL_VAR_COST) {
        // the limit shown's, as $redis_ratelimit_remaining's
        if (shown.status == 0) return std::nullopt;
        if (!charged(shown)) return std::string("0");
        return std::to_string(shown.limits[shown.decision->reported].cost);
    }

    if (!shows_limit(shown)) return std::nullopt;

    const rrl_decision_t& d = *shown.decision;

    switch (variable) {
        case RRL_VAR_REMAINING:
            return std::to_string(d.remaining);
        case RRL_VAR_RESET:
            return std::to_string(d.reset_after);
        case RRL_VAR_ZONE:
            return std::string(zone_of(shown.limits[d.reported]));
        default:
            return std::nullopt;
    }
}

std::string shown_problem(unsigned status, const rrl_shown_t& shown) {
    std::vector<std::string_view> zones;
    for (std::size_t i = 0; i < shown.nlimits; i++) {
        if (!shown.results[i].passed) zones.push_back(zone_of(shown.limits[i]));
    }
    return problem_json(status, zones);
}

}  // namespace rrl
