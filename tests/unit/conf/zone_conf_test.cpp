// rrl::zone_conf_word / _done and their C API: "redis_ratelimit_zone"'s
// parameters and the bounds of a zone, messages as nginx -t prints them.
#include "conf/zone_conf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/unit/conf/conf_parse.hpp"
#include "api/rrl.h"
#include "api/rrl_conf.h"

namespace {

constexpr const char* kDirective = "redis_ratelimit_zone";

std::string parse(const std::vector<std::string_view>& words,
                  rrl::ZoneConf& conf) {
    return rrl_test::parse_words(
        words,
        [&](std::string_view w) {
            return rrl::zone_conf_word(conf, kDirective, w);
        },
        [&] { return rrl::zone_conf_done(conf, kDirective); });
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
    rrl::ZoneConf on;
    EXPECT_EQ(parse({"zone=z", "rate=1r/s", "overrides=on"}, on), "");
    EXPECT_TRUE(on.overrides);
    rrl::ZoneConf off;
    EXPECT_EQ(parse({"zone=z", "rate=1r/s", "overrides=off"}, off), "");
    EXPECT_FALSE(off.overrides);
    for (std::string_view bad :
         {"overrides=x", "overrides=", "overrides=ON", "overrides=1"}) {
        EXPECT_EQ(error_of({"zone=z", "rate=1r/s", bad}),
                  "invalid value \"" + std::string(bad) +
                      "\" in \"redis_ratelimit_zone\" directive, it must be "
                      "\"on\" or \"off\"");
    }
}

TEST(ZoneConf, Lease) {
    rrl::ZoneConf conf;
    EXPECT_EQ(parse({"zone=z", "rate=1r/s"}, conf), "");
    EXPECT_EQ(conf.lease, 0u);
    // "05%": a number as ngx_atoi's
    for (auto [word, lease] :
         std::vector<std::pair<std::string_view, unsigned>>{{"lease=10%", 10},
                                                            {"lease=1%", 1},
                                                            {"lease=100%", 100},
                                                            {"lease=05%", 5},
                                                            {"lease=off", 0}}) {
        rrl::ZoneConf c;
        EXPECT_EQ(parse({"zone=z", "rate=1r/s", word}, c), "") << word;
        EXPECT_EQ(c.lease, lease) << word;
    }
    for (std::string_view ok : {"fixed_window", "sliding_window"}) {
        rrl::ZoneConf c;
        EXPECT_EQ(parse({"zone=z", "rate=1r/s", "lease=50%",
                         "algorithm=" + std::string(ok)},
                        c),
                  "");
        EXPECT_EQ(c.lease, 50u);
    }
    rrl::ZoneConf tb;
    EXPECT_EQ(
        parse({"lease=5%", "zone=z", "rate=1r/s", "algorithm=token_bucket"},
              tb),
        "");
    EXPECT_EQ(tb.lease, 5u);

    for (std::string_view bad :
         {"lease=", "lease=0%", "lease=101%", "lease=10", "lease=%",
          "lease=-1%", "lease=+5%", "lease=1.5%", "lease=10%%", "lease=on",
          "lease=OFF", "lease= 10%", "lease=1000000000000000000%"}) {
        EXPECT_EQ(error_of({"zone=z", "rate=1r/s", bad}),
                  "invalid lease value \"" + std::string(bad) +
                      "\" in \"redis_ratelimit_zone\" directive, it must be "
                      "\"off\" or a percentage from 1% to 100%");
    }
}

TEST(ZoneConf, LeaseRefused) {
    EXPECT_EQ(
        error_of({"zone=z", "rate=1r/s", "lease=10%", "algorithm=sliding_log"}),
        "\"lease=10%\" cannot be used with \"algorithm=sliding_log\" (a "
        "sliding_log keeps each request's own time: a lease cannot take "
        "units ahead) in \"redis_ratelimit_zone\" directive");
    for (std::string_view a : {"leaky_bucket", "gcra"}) {
        EXPECT_EQ(error_of({"zone=z", "algorithm=" + std::string(a),
                            "rate=1r/s", "lease=7%"}),
                  "\"lease=7%\" cannot be used with "
                  "\"algorithm=leaky_bucket\" (a leaky bucket spaces each "
                  "request: a lease cannot take units ahead) in "
                  "\"redis_ratelimit_zone\" directive");
    }
    EXPECT_EQ(error_of({"zone=z", "rate=1r/s", "overrides=on", "lease=100%"}),
              "\"lease=100%\" and \"overrides=on\" together are not "
              "supported in \"redis_ratelimit_zone\" directive");
    // off is no lease: nothing to refuse
    EXPECT_EQ(error_of({"zone=z", "rate=1r/s", "lease=off", "overrides=on",
                        "algorithm=sliding_log"}),
              "");
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
    EXPECT_EQ(z.lease, 0u);
    EXPECT_EQ(std::string(z.name.data, z.name.len), "user");
    EXPECT_EQ(std::string(z.rate.data, z.rate.len), "100r/m");
    EXPECT_EQ(z.algorithm, RRL_SLIDING_LOG);
    EXPECT_EQ(z.limit, 100u);
    EXPECT_EQ(z.period_ms, 60000u);
    EXPECT_EQ(z.burst, 20u);
    EXPECT_EQ(z.capacity, 120u);
}

// The zone's part of a request's limit, copied per request by the shim.
TEST(ZoneConfCApi, CallLimit) {
    auto call_limit = [](std::vector<const char*> words) {
        rrl_conf_t conf;
        rrl_conf_init(&conf, RRL_CONF_ZONE, kDirective);
        for (const char* w : words) EXPECT_EQ(c_word(&conf, w), RRL_OK) << w;
        EXPECT_EQ(rrl_conf_done(&conf), RRL_OK) << conf.err;
        rrl_call_limit_t l;
        std::memset(&l, 0xff, sizeof(l));
        rrl_zone_call_limit(&conf.u.zone, "user", 4, &l);
        EXPECT_EQ(l.burst, conf.u.zone.burst);  // as the algorithm uses it
        return l;
    };
    rrl_call_limit_t l = call_limit(
        {"zone=user", "rate=100r/m", "algorithm=sliding_log", "overrides=on"});
    EXPECT_EQ(std::string(l.zone, l.zone_len), "user");
    EXPECT_EQ(l.algorithm, RRL_SLIDING_LOG);
    EXPECT_EQ(l.limit, 100u);
    EXPECT_EQ(l.period_ms, 60000u);
    EXPECT_EQ(l.overrides, 1);
    EXPECT_EQ(l.override, RRL_OVERRIDE_NONE);
    EXPECT_EQ(l.lease, 0u);
    EXPECT_EQ(l.delay, RRL_DELAY_NONE);
    EXPECT_EQ(l.cost, 0u);
    EXPECT_EQ(l.key, nullptr);
    EXPECT_EQ(l.key_len, 0u);
    EXPECT_EQ(l.lease_want, 0u);
    EXPECT_EQ(l.lease_granted, 0u);

    l = call_limit({"zone=user", "rate=5r/s", "lease=25%"});
    EXPECT_EQ(l.algorithm, RRL_DEFAULT_ALGORITHM);
    EXPECT_EQ(l.limit, 5u);
    EXPECT_EQ(l.period_ms, 1000u);
    EXPECT_EQ(l.overrides, 0);
    EXPECT_EQ(l.lease, 25u);
}

TEST(ZoneConfCApi, Lease) {
    rrl_conf_t conf;
    const rrl_zone_conf_t& z = conf.u.zone;
    rrl_conf_init(&conf, RRL_CONF_ZONE, kDirective);
    EXPECT_EQ(z.lease, 0u);
    EXPECT_EQ(c_word(&conf, "zone=user"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "rate=100r/m"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "lease=25%"), RRL_OK);
    EXPECT_EQ(z.lease, 25u);
    EXPECT_EQ(c_word(&conf, "overrides=off"), RRL_OK);
    EXPECT_EQ(z.lease, 25u);  // kept across words
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(z.lease, 25u);
    EXPECT_EQ(c_word(&conf, "algorithm=gcra"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_ERROR);
    EXPECT_NE(std::string(conf.err).find("\"lease=25%\""), std::string::npos);
}

// issue 25: a parameter given twice was taken silently, the last winning
TEST(ZoneConf, EachParameterOnce) {
    const std::vector<std::pair<std::string_view, std::string_view>> twice = {
        {"zone=fw", "zone=tb"},
        {"rate=5r/s", "rate=5r/s"},
        {"algorithm=fixed_window", "algorithm=token_bucket"},
        {"burst=1", "burst=2"},
        {"overrides=on", "overrides=off"},
        {"lease=10%", "lease=20%"},
        {"lease=off", "lease=10%"},
    };
    for (const auto& [first, second] : twice) {
        EXPECT_EQ(error_of({first, second}),
                  "duplicate parameter \"" + std::string(second) +
                      "\" in \"redis_ratelimit_zone\" "
                      "directive")
            << first;
    }
    // a duplicate, before its value is judged
    EXPECT_EQ(error_of({"zone=z", "rate=1r/s", "rate=0r/s"}),
              "duplicate parameter \"rate=0r/s\" in \"redis_ratelimit_zone\" "
              "directive");

    // through the C API, whose struct keeps what was seen
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_ZONE, kDirective);
    EXPECT_EQ(c_word(&conf, "overrides=on"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "overrides=off"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "duplicate parameter \"overrides=off\" in "
                 "\"redis_ratelimit_zone\" directive");
    EXPECT_EQ(conf.u.zone.overrides, 1);
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
