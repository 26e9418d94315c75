// rrl::value_conf: the directives of one word, by name.
#include "conf/value_conf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "api/rrl_conf.h"
#include "api/rrl_decision.h"

namespace {

const rrl::SizeParser kNoSize = [](std::string_view) {
    return std::optional<std::uint64_t>();
};

std::string value(std::uint64_t& v, const char* directive, const char* word) {
    return rrl::value_conf(v, directive, word, 32 * 1024, kNoSize);
}

TEST(ValueConf, Choices) {
    std::uint64_t v = 99;
    EXPECT_EQ(value(v, "redis_ratelimit_headers", "off"), "");
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(value(v, "redis_ratelimit_headers", "both"), "");
    EXPECT_EQ(v, unsigned{RRL_SHOW_LEGACY | RRL_SHOW_DRAFT});
    EXPECT_EQ(value(v, "redis_ratelimit_headers", "Draft"), "");
    EXPECT_EQ(v, unsigned{RRL_SHOW_DRAFT});
    EXPECT_EQ(value(v, "redis_ratelimit_fail", "LOCAL"), "");
    EXPECT_EQ(v, unsigned{RRL_FAIL_LOCAL});
    EXPECT_EQ(value(v, "redis_ratelimit_log_level", "info"), "");
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(value(v, "redis_ratelimit_log_level", "error"), "");
    EXPECT_EQ(v, 3u);
    EXPECT_EQ(value(v, "redis_ratelimit_status", "503"), "");
    EXPECT_EQ(v, 503u);
    EXPECT_EQ(value(v, "redis_ratelimit_deny_cache", "off"), "");
    EXPECT_EQ(v, 0u);
}

TEST(ValueConf, Errors) {
    std::uint64_t v = 7;
    EXPECT_EQ(value(v, "redis_ratelimit_fail", "x"),
              "invalid value \"x\" in \"redis_ratelimit_fail\" directive, it "
              "must be \"open\", \"closed\" or \"local\"");
    EXPECT_EQ(value(v, "redis_ratelimit_headers", "standard"),
              "invalid value \"standard\" in \"redis_ratelimit_headers\" "
              "directive, it must be \"off\", \"legacy\", \"draft\" or "
              "\"both\"");
    EXPECT_EQ(value(v, "redis_ratelimit_log_level", "debug"),
              "invalid value \"debug\" in \"redis_ratelimit_log_level\" "
              "directive, it must be \"info\", \"notice\", \"warn\" or "
              "\"error\"");
    EXPECT_EQ(value(v, "redis_ratelimit_log_level", "err"),
              "invalid value \"err\" in \"redis_ratelimit_log_level\" "
              "directive, it must be \"info\", \"notice\", \"warn\" or "
              "\"error\"");
    EXPECT_EQ(value(v, "redis_ratelimit_deny_cache", "1m"),
              "invalid value \"1m\" in \"redis_ratelimit_deny_cache\" "
              "directive, it must be \"off\" or a size of at least 32k");
    EXPECT_EQ(value(v, "redis_ratelimit", "x"),
              "\"redis_ratelimit\" is no directive of one value");
    EXPECT_EQ(v, 7u);
}

TEST(ValueConfCApi, Word) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_VALUE, "redis_ratelimit_headers");
    EXPECT_EQ(rrl_conf_word(&conf, "legacy", 6), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.value, unsigned{RRL_SHOW_LEGACY});
    EXPECT_EQ(rrl_conf_word(&conf, "none", 4), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid value \"none\" in \"redis_ratelimit_headers\" "
                 "directive, it must be \"off\", \"legacy\", \"draft\" or "
                 "\"both\"");
}

}  // namespace
