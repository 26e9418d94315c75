// rrl::zone_conf_word / _done and their C API: "redis_ratelimit_zone"'s
// parameters and the bounds of a zone, messages as nginx -t prints them.
#include "zone_conf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rrl.h"
#include "rrl_conf.h"

namespace {

constexpr const char* kDirective = "redis_ratelimit_zone";

std::string parse(const std::vector<std::string_view>& words,
                  rrl::ZoneConf& conf) {
    for (std::string_view w : words) {
        std::string error = rrl::zone_conf_word(conf, kDirective, w);
        if (!error.empty()) return error;
    }
    return rrl::zone_conf_done(conf, kDirective);
}

std::string error_of(const std::vector<std::string_view>& words) {
    rrl::ZoneConf conf;
    return parse(words, conf);
}

TEST(ZoneConf, Defaults) {
    rrl::ZoneConf conf;
    EXPECT_EQ(parse({"zone=ip", "rate=10r/s"}, conf), "");
    EXPECT_EQ(conf.name, "ip");
    EXPECT_EQ(conf.rate, "10r/s");
    EXPECT_EQ(conf.algorithm, RRL_SLIDING_WINDOW);
    EXPECT_EQ(conf.limit, 10u);
    EXPECT_EQ(conf.period_ms, 1000u);
    EXPECT_EQ(conf.burst, 0u);
    EXPECT_EQ(conf.capacity, 10u);
}

TEST(ZoneConf, AlgorithmsAndBursts) {
    rrl::ZoneConf tb;
    EXPECT_EQ(parse({"zone=t", "rate=5r/m", "algorithm=token_bucket"}, tb), "");
    EXPECT_EQ(tb.algorithm, RRL_TOKEN_BUCKET);
    EXPECT_EQ(tb.period_ms, 60000u);
    EXPECT_EQ(tb.burst, 5u);
    EXPECT_EQ(tb.capacity, 5u);

    rrl::ZoneConf gcra;
    EXPECT_EQ(parse({"burst=3", "algorithm=gcra", "zone=g", "rate=5r/m"}, gcra),
              "");
    EXPECT_EQ(gcra.algorithm, RRL_LEAKY_BUCKET);
    EXPECT_EQ(gcra.capacity, 4u);

    rrl::ZoneConf log;
    EXPECT_EQ(
        parse({"zone=l", "rate=9990r/h", "burst=10", "algorithm=sliding_log"},
              log),
        "");
    EXPECT_EQ(log.capacity, 10000u);
}

TEST(ZoneConf, WordErrors) {
    EXPECT_EQ(error_of({"zone=z", "rate=5r/x"}),
              "invalid rate \"rate=5r/x\" in \"redis_ratelimit_zone\" "
              "directive");
    EXPECT_EQ(
        error_of({"zone=z", "rate=5r/s", "algorithm=GCRA"}),
        "invalid algorithm \"algorithm=GCRA\" in \"redis_ratelimit_zone\" "
        "directive");
    EXPECT_EQ(error_of({"zone=a{b"}),
              "invalid zone name \"a{b\" in \"redis_ratelimit_zone\" "
              "directive");
    EXPECT_EQ(error_of({"zone="}),
              "invalid zone name \"\" in \"redis_ratelimit_zone\" directive");
    EXPECT_EQ(error_of({"zone=z", "rate=1r/s", "burst=-1"}),
              "invalid burst value \"burst=-1\" in \"redis_ratelimit_zone\" "
              "directive");
    EXPECT_EQ(error_of({"burst=1000000001"}),
              "invalid burst value \"burst=1000000001\" in "
              "\"redis_ratelimit_zone\" directive");
    EXPECT_EQ(error_of({"zone=z", "foo=1"}),
              "invalid parameter \"foo=1\" in \"redis_ratelimit_zone\" "
              "directive");
}

TEST(ZoneConf, Overrides) {
    rrl::ZoneConf conf;
    EXPECT_EQ(parse({"zone=z", "rate=1r/s"}, conf), "");
    EXPECT_FALSE(conf.overrides);
    EXPECT_EQ(parse({"overrides=on"}, conf), "");
    EXPECT_TRUE(conf.overrides);
    EXPECT_EQ(parse({"overrides=off"}, conf), "");
    EXPECT_FALSE(conf.overrides);
    for (std::string_view bad :
         {"overrides=x", "overrides=", "overrides=ON", "overrides=1"}) {
        EXPECT_EQ(error_of({"zone=z", "rate=1r/s", bad}),
                  "invalid value \"" + std::string(bad) +
                      "\" in \"redis_ratelimit_zone\" directive, it must be "
                      "\"on\" or \"off\"");
    }
}

TEST(ZoneConf, Bounds) {
    EXPECT_EQ(error_of({"rate=1r/s"}),
              "\"redis_ratelimit_zone\" must have \"zone\" parameter");
    EXPECT_EQ(error_of({"zone=z"}),
              "\"redis_ratelimit_zone\" must have \"rate\" parameter");
    EXPECT_EQ(
        error_of({"zone=z", "burst=0", "rate=5r/s", "algorithm=token_bucket"}),
        "\"burst=0\" leaves no room for any request with "
        "\"algorithm=token_bucket\" in \"redis_ratelimit_zone\" "
        "directive");
    EXPECT_EQ(error_of({"zone=z", "rate=10000r/m", "burst=1",
                        "algorithm=sliding_log"}),
              "\"rate=10000r/m\" with \"burst=1\" allows 10001 requests a "
              "period, \"algorithm=sliding_log\" at most 10000 in "
              "\"redis_ratelimit_zone\" directive");
    EXPECT_EQ(error_of({"zone=z", "algorithm=sliding_log", "rate=200000r/h"}),
              "\"rate=200000r/h\" with \"burst=0\" allows 200000 requests a "
              "period, \"algorithm=sliding_log\" at most 10000 in "
              "\"redis_ratelimit_zone\" directive");
    // a bucket of 10^9 refilled at 1 a year: 10^9 years
    EXPECT_EQ(error_of({"zone=z", "rate=1r/365d", "burst=1000000000",
                        "algorithm=token_bucket"}),
              "\"rate=1r/365d\" with \"burst=1000000000\" keeps state for "
              "more than 100 years in \"redis_ratelimit_zone\" directive");
}

int c_word(rrl_conf_t* conf, const char* word) {
    return rrl_conf_word(conf, word, std::strlen(word));
}

TEST(ZoneConfCApi, Parses) {
    rrl_conf_t conf;
    const rrl_zone_conf_t& z = conf.u.zone;
    rrl_conf_init(&conf, RRL_CONF_ZONE, kDirective);
    EXPECT_EQ(z.algorithm, RRL_DEFAULT_ALGORITHM);
    EXPECT_EQ(z.burst, RRL_BURST_UNSET);
    EXPECT_EQ(c_word(&conf, "zone=user"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "rate=100r/m"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "algorithm=sliding_log"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "burst=20"), RRL_OK);
    EXPECT_EQ(z.overrides, 0);
    EXPECT_EQ(c_word(&conf, "overrides=on"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(z.overrides, 1);
    EXPECT_EQ(std::string(z.name.data, z.name.len), "user");
    EXPECT_EQ(std::string(z.rate.data, z.rate.len), "100r/m");
    EXPECT_EQ(z.algorithm, RRL_SLIDING_LOG);
    EXPECT_EQ(z.limit, 100u);
    EXPECT_EQ(z.period_ms, 60000u);
    EXPECT_EQ(z.burst, 20u);
    EXPECT_EQ(z.capacity, 120u);
}

TEST(ZoneConfCApi, Errors) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_ZONE, kDirective);
    EXPECT_EQ(c_word(&conf, "rate=0r/s"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid rate \"rate=0r/s\" in \"redis_ratelimit_zone\" "
                 "directive");
    EXPECT_EQ(rrl_conf_done(&conf), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "\"redis_ratelimit_zone\" must have \"zone\" parameter");
}

}  // namespace
