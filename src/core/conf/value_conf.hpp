// The directives of one word, known by name: "redis_ratelimit_status
// CODE", "redis_ratelimit_deny_cache off|SIZE", "redis_ratelimit_lease_zone
// SIZE" and the choices of
// "redis_ratelimit_headers", "redis_ratelimit_fail" (its mode) and
// "redis_ratelimit_log_level", matched as nginx's enum slots match them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "conf/shm_conf.hpp"

namespace rrl {

// The value of word; a choice's is its rank in the list the message
// names: headers give RRL_SHOW_* bits, fail RRL_FAIL_*, and log_level 0
// (info) to 3 (error).
std::string value_conf(std::uint64_t& value, std::string_view directive,
                       std::string_view word, std::uint64_t min_size,
                       const SizeParser& parse_size);

}  // namespace rrl
