// The header fields of draft-ietf-httpapi-ratelimit-headers (-10 and
// later), in Structured Field syntax (RFC 9651): RateLimit-Policy lists
// every limit of a request, RateLimit shows the one closest to exhaustion
// (the decision's reported limit).
//
//   RateLimit-Policy: "per_ip";q=20;w=1, "key_hour";q=5000;w=3600
//   RateLimit: "per_ip";r=0;t=1
//
// q is what the limit allows per w seconds: N + burst for the window
// algorithms (their exact quota), N for the buckets, whose burst (the
// bucket of token_bucket, the extra tolerance of leaky_bucket) is the
// vendor parameter rrl-burst. w is PERIOD rounded up to whole seconds (the
// draft has integers only). qu is left out: its default, "requests", with
// a cost counting as that many requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/rrl_types.h"

namespace rrl {

// "..." with '"' and '\' escaped; nullopt when s has a byte no sf-string
// may hold (outside printable ASCII).
std::optional<std::string> sf_string(std::string_view s);

// RateLimit-Policy: one item per limit, "<zone>";q=<N>;w=<seconds>;
// nullopt when a zone's name is no sf-string.
std::optional<std::string> ratelimit_policy(const rrl_policy_t* policies,
                                            std::size_t n);

// RateLimit: "<zone>";r=<remaining>;t=<reset_after> of the reported limit;
// nullopt when the zone's name is no sf-string.
std::optional<std::string> ratelimit(std::string_view zone,
                                     std::int64_t remaining,
                                     std::int64_t reset_after);

}  // namespace rrl
