#include "decide/fields.hpp"

namespace rrl {

namespace {

bool is_bucket(int algorithm) {
    return algorithm == RRL_TOKEN_BUCKET || algorithm == RRL_LEAKY_BUCKET;
}

// An integer of w: never 0, which would be a window of no time.
std::uint64_t window_seconds(std::uint64_t period_ms) {
    std::uint64_t s = period_ms / 1000 + (period_ms % 1000 != 0 ? 1 : 0);
    return s < 1 ? 1 : s;
}

}  // namespace

std::optional<std::string> sf_string(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char c : s) {
        if (c < 0x20 || c > 0x7e) return std::nullopt;
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

std::optional<std::string> ratelimit_policy(const rrl_policy_t* policies,
                                            std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; i++) {
        const rrl_policy_t& p = policies[i];
        auto name = sf_string({p.zone, p.zone_len});
        if (!name) return std::nullopt;
        if (!out.empty()) out += ", ";
        std::uint64_t quota =
            is_bucket(p.algorithm) ? p.limit : p.limit + p.burst;
        out += *name + ";q=" + std::to_string(quota) +
               ";w=" + std::to_string(window_seconds(p.period_ms));
        if (is_bucket(p.algorithm)) {
            out += ";rrl-burst=" + std::to_string(p.burst);
        }
    }
    return out;
}

std::optional<std::string> ratelimit(std::string_view zone,
                                     std::int64_t remaining,
                                     std::int64_t reset_after) {
    auto name = sf_string(zone);
    if (!name) return std::nullopt;
    return *name + ";r=" + std::to_string(remaining) +
           ";t=" + std::to_string(reset_after);
}

}  // namespace rrl
