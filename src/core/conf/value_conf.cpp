#include "conf/value_conf.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "conf/conf_word.hpp"
#include "conf/limit_conf.hpp"
#include "base/rrl_decision_types.h"

namespace rrl {

namespace {

static_assert(RRL_SHOW_LEGACY == 1 && RRL_SHOW_DRAFT == 2 &&
              RRL_FAIL_OPEN == 0 && RRL_FAIL_CLOSED == 1 &&
              RRL_FAIL_LOCAL == 2);

bool same_letters(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](unsigned char x, unsigned char y) {
                          return std::tolower(x) == std::tolower(y);
                      });
}

// "\"a\", \"b\" or \"c\""
std::string one_of(std::initializer_list<std::string_view> names) {
    std::string list;
    size_t i = 0;
    for (std::string_view name : names) {
        if (i > 0) list += (i + 1 < names.size()) ? ", " : " or ";
        list += quoted(name);
        i++;
    }
    return list;
}

std::string choice(std::uint64_t& value, std::string_view directive,
                   std::string_view word,
                   std::initializer_list<std::string_view> names) {
    std::uint64_t rank = 0;
    for (std::string_view name : names) {
        if (same_letters(name, word)) {
            value = rank;
            return "";
        }
        rank++;
    }
    return "invalid value " + quoted(word) + " in " + quoted(directive) +
           " directive, it must be " + one_of(names);
}

}  // namespace

std::string value_conf(std::uint64_t& value, std::string_view directive,
                       std::string_view word, std::uint64_t min_size,
                       const SizeParser& parse_size) {
    if (directive == "redis_ratelimit_status") {
        return status_conf(value, directive, word);
    }
    if (directive == "redis_ratelimit_deny_cache") {
        return deny_cache_conf(value, directive, word, min_size, parse_size);
    }
    if (directive == "redis_ratelimit_lease_zone") {
        return lease_zone_conf(value, directive, word, min_size, parse_size);
    }
    if (directive == "redis_ratelimit_headers") {
        return choice(value, directive, word,
                      {"off", "legacy", "draft", "both"});
    }
    if (directive == "redis_ratelimit_fail") {
        return choice(value, directive, word, {"open", "closed", "local"});
    }
    if (directive == "redis_ratelimit_log_level") {
        return choice(value, directive, word,
                      {"info", "notice", "warn", "error"});
    }
    return quoted(directive) + " is no directive of one value";
}

}  // namespace rrl
