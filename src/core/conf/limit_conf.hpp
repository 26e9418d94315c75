// The grammar of "redis_ratelimit zone=NAME [cost=N|cost=$VAR]
// [settle=VALUE] [delay=D | nodelay]" and of the
// parameters of "redis_ratelimit_fail MODE [local_zone=NAME:SIZE]
// [local_share=1/N]" (the words after MODE) and "redis_ratelimit_status
// CODE": a location's directives.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "conf/conf_word.hpp"
#include "base/rrl_call_args_types.h"
#include "base/rrl_conf_types.h"

namespace rrl {

struct LimitConf {
    std::string_view zone_name;
    std::uint64_t cost = 1;
    std::string_view cost_arg = "1";       // the constant cost, as written
    std::string_view variable;             // of the last "cost=$VAR"
    std::uint64_t delay = RRL_DELAY_NONE;  // D of delay=D; nodelay: none
    std::string_view delay_word;           // "delay=D" or "nodelay"
    std::string_view settle;               // VALUE of settle=VALUE
    int host_word = RRL_CONF_HOST_COST;    // the last word the host's: which
    std::uint32_t seen = 0;                // zone=, cost=, settle= (once())
};

// A "cost=$VAR" word is the host's to compile (ConfWord::host), from
// conf.variable; a "settle=VALUE" word too (a complex value: a variable,
// usually), from conf.settle; conf.host_word tells them apart.
ConfWord limit_conf_word(LimitConf& conf, std::string_view directive,
                         std::string_view word);
std::string limit_conf_done(const LimitConf& conf, std::string_view directive);

// The zone's side of "delay=D", once the zone is known (it may be defined
// after the location): leaky_bucket only, D no more than its burst. "" when
// good; else the message, which names the directive but not FILE:LINE.
std::string limit_delay_check(std::uint64_t delay, int algorithm,
                              std::uint64_t burst, std::string_view zone,
                              std::string_view directive);

// A limit against its zone (rrl_limit_check()): a constant cost within the
// zone's capacity (a variable's is 0: checked per request), then delay=D.
std::string limit_check(std::uint64_t cost, std::uint64_t capacity,
                        std::uint64_t delay, int algorithm, std::uint64_t burst,
                        std::string_view zone, std::string_view directive);

struct FailConf {
    bool local = false;          // the mode is "local"
    std::string_view zone_word;  // "local_zone=NAME:SIZE", for the host
    std::string_view share_word;
    std::uint64_t share = 1;  // N of local_share=1/N
};

std::string fail_conf_word(FailConf& conf, std::string_view directive,
                           std::string_view word);
std::string fail_conf_done(FailConf& conf, std::string_view directive);

// A rejection's status code, from 400 to 599.
std::string status_conf(std::uint64_t& status, std::string_view directive,
                        std::string_view word);

}  // namespace rrl
