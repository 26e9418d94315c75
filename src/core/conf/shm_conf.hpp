// The sizes of the module's shared memory zones as directives give them:
// "redis_ratelimit_deny_cache off|SIZE", "redis_ratelimit_lease_zone SIZE"
// and the "local_zone=NAME:SIZE"
// parameter of "redis_ratelimit_fail local", with the zones' names.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rrl {

// the zones the module adds itself: no "local_zone=" may take them
inline constexpr std::string_view metrics_zone_name = "redis_ratelimit_metrics";
inline constexpr std::string_view deny_zone_name = "redis_ratelimit_deny";
inline constexpr std::string_view lease_zone_name = "redis_ratelimit_lease";
// "redis_ratelimit_fail local" without "local_zone="
inline constexpr std::string_view default_local_zone_name =
    "redis_ratelimit_local";

// A size as nginx reads it (ngx_parse_size()), nullopt: not a size.
using SizeParser =
    std::function<std::optional<std::uint64_t>(std::string_view)>;

// "off" is 0; any other size is at least min_size (a few pages).
std::string deny_cache_conf(std::uint64_t& size, std::string_view directive,
                            std::string_view value, std::uint64_t min_size,
                            const SizeParser& parse_size);

// "redis_ratelimit_lease_zone SIZE": at least min_size.
std::string lease_zone_conf(std::uint64_t& size, std::string_view directive,
                            std::string_view value, std::uint64_t min_size,
                            const SizeParser& parse_size);

struct LocalZoneConf {
    std::string_view name = default_local_zone_name;
    std::string_view size_word;  // as written; empty: sized by the host
    std::uint64_t size = 0;      // 0: the default zone
};

// word is the whole "local_zone=NAME:SIZE", or empty for the default zone.
std::string local_zone_conf(LocalZoneConf& zone, std::string_view directive,
                            std::string_view word, std::uint64_t min_size,
                            const SizeParser& parse_size);

}  // namespace rrl
