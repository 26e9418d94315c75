// The grammar of "redis_ratelimit_zone KEY zone=NAME rate=Nr/PERIOD
// [algorithm=NAME] [burst=N] [overrides=on|off] [lease=P%|off]" (the words
// after KEY) and the bounds of a zone: room for one request, state kept
// under 100 years, sliding_log's capacity, a lease only where units can be
// taken ahead (fixed_window, sliding_window, token_bucket) and not with
// overrides.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/rrl_types.h"

namespace rrl {

struct ZoneConf {
    std::string_view name;
    std::string_view rate;  // as written, for messages and logs
    int algorithm = RRL_DEFAULT_ALGORITHM;
    std::uint64_t limit = 0;  // N of rate=Nr/PERIOD; 0: no rate yet
    std::uint64_t period_ms = 0;
    std::uint64_t burst =
        RRL_BURST_UNSET;         // as the algorithm uses it, once done
    std::uint64_t capacity = 0;  // the largest cost, on idle
    bool overrides = false;      // the script reads a key's override
    unsigned lease = 0;          // P of lease=P% (1..100); 0: off
    std::uint32_t seen = 0;      // the parameters given (once())
};

// Reads one word; "" when it is good, else the message, naming directive.
std::string zone_conf_word(ZoneConf& conf, std::string_view directive,
                           std::string_view word);

// The checks after the last word; sets burst and capacity.
std::string zone_conf_done(ZoneConf& conf, std::string_view directive);

}  // namespace rrl
