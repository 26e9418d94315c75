// rrl::limit_conf_* and rrl::fail_conf_* and their C API: the words of
// "redis_ratelimit" and the parameters of "redis_ratelimit_fail".
#include "conf/limit_conf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/conf/conf_parse.hpp"
#include "conf/conf_word.hpp"
#include "api/rrl_conf.h"

namespace {

constexpr const char* kLimit = "redis_ratelimit";
constexpr const char* kFail = "redis_ratelimit_fail";

std::string parse(const std::vector<std::string_view>& words,
                  rrl::LimitConf& conf, int* variables = nullptr) {
    return rrl_test::parse_words(
        words,
        [&](std::string_view w) {
            return rrl::limit_conf_word(conf, kLimit, w);
        },
        [&] { return rrl::limit_conf_done(conf, kLimit); }, variables);
}

std::string limit_error(const std::vector<std::string_view>& words) {
    rrl::LimitConf conf;
    return parse(words, conf);
}

TEST(LimitConf, ZoneAndConstantCost) {
    rrl::LimitConf conf;
    EXPECT_EQ(parse({"zone=z"}, conf), "");
    EXPECT_EQ(conf.zone_name, "z");
    EXPECT_EQ(conf.cost, 1u);
    EXPECT_EQ(conf.cost_arg, "1");
    EXPECT_TRUE(conf.variable.empty());

    rrl::LimitConf costly;
    EXPECT_EQ(parse({"cost=1000000000", "zone=z"}, costly), "");
    EXPECT_EQ(costly.cost, 1000000000u);
    EXPECT_EQ(costly.cost_arg, "1000000000");
}

TEST(LimitConf, VariableCostIsTheHosts) {
    rrl::LimitConf conf;
    int variables = 0;
    EXPECT_EQ(parse({"zone=z", "cost=$arg_cost"}, conf, &variables), "");
    EXPECT_EQ(variables, 1);
    EXPECT_EQ(conf.variable, "$arg_cost");
    EXPECT_EQ(conf.cost, 1u);
}

// settle=VALUE: a complex value, the host's to compile as cost=$VAR is;
// host_word tells the host which of the two the word was
TEST(LimitConf, SettleIsTheHosts) {
    rrl::LimitConf conf;
    int host = 0;
    EXPECT_EQ(conf.settle, "");
    EXPECT_EQ(parse({"zone=z", "cost=2000",
                     "settle=$upstream_http_x_usage_total_tokens"},
                    conf, &host),
              "");
    EXPECT_EQ(host, 1);
    EXPECT_EQ(conf.settle, "$upstream_http_x_usage_total_tokens");
    EXPECT_EQ(conf.host_word, RRL_CONF_HOST_SETTLE);
    EXPECT_EQ(conf.cost, 2000u);

    rrl::LimitConf both;
    rrl::ConfWord w = rrl::limit_conf_word(both, kLimit, "settle=x$bytes_sent");
    EXPECT_TRUE(w.host);
    EXPECT_EQ(both.host_word, RRL_CONF_HOST_SETTLE);
    w = rrl::limit_conf_word(both, kLimit, "cost=$arg_cost");
    EXPECT_TRUE(w.host);
    EXPECT_EQ(both.host_word, RRL_CONF_HOST_COST);
    EXPECT_EQ(both.settle, "x$bytes_sent");  // kept
}

TEST(LimitConf, SettleErrors) {
    EXPECT_EQ(limit_error({"zone=z", "settle="}),
              "invalid parameter \"settle=\" in \"redis_ratelimit\" directive");
    EXPECT_EQ(limit_error({"zone=z", "settle=$a", "settle=$b"}),
              "duplicate parameter \"settle=$b\" in \"redis_ratelimit\" "
              "directive");
    EXPECT_EQ(limit_error({"zone=z", "settle=$a", "settle=$a"}),
              "duplicate parameter \"settle=$a\" in \"redis_ratelimit\" "
              "directive");
    EXPECT_EQ(limit_error({"settle=$a"}),
              "\"redis_ratelimit\" must have \"zone\" parameter");
}

TEST(LimitConf, Errors) {
    const std::string range =
        " in \"redis_ratelimit\" directive, it must be a number from 1 to "
        "1000000000 or a variable";
    EXPECT_EQ(limit_error({"zone=z", "cost=0"}),
              "invalid cost \"cost=0\"" + range);
    EXPECT_EQ(limit_error({"zone=z", "cost="}),
              "invalid cost \"cost=\"" + range);
    EXPECT_EQ(limit_error({"cost=1000000001"}),
              "invalid cost \"cost=1000000001\"" + range);
    EXPECT_EQ(limit_error({"zone=z", "foo=1"}),
              "invalid parameter \"foo=1\" in \"redis_ratelimit\" directive");
    EXPECT_EQ(limit_error({"cost=1"}),
              "\"redis_ratelimit\" must have \"zone\" parameter");
    EXPECT_EQ(limit_error({"zone="}),
              "\"redis_ratelimit\" must have \"zone\" parameter");
}

// issue 25: zone=, cost= given twice were taken silently, the last winning
// (cost=3 cost=$arg_c: the variable's); delay= and settle= were refused
TEST(LimitConf, EachParameterOnce) {
    const std::string in = " in \"redis_ratelimit\" directive";
    EXPECT_EQ(limit_error({"zone=fw", "zone=tb"}),
              "duplicate parameter \"zone=tb\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "zone=z"}),
              "duplicate parameter \"zone=z\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "cost=5", "cost=7"}),
              "duplicate parameter \"cost=7\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "cost=3", "cost=$arg_c"}),
              "duplicate parameter \"cost=$arg_c\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "cost=$arg_c", "cost=3"}),
              "duplicate parameter \"cost=3\"" + in);
    EXPECT_EQ(limit_error({"cost=$a", "settle=$s", "cost=$b", "zone=z"}),
              "duplicate parameter \"cost=$b\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "cost=1", "cost=0"}),
              "duplicate parameter \"cost=0\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "settle=$a", "settle="}),
              "duplicate parameter \"settle=\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "delay=1", "delay=2"}),
              "duplicate parameter \"delay=2\"" + in);
    EXPECT_EQ(limit_error({"zone=z", "nodelay", "delay=2"}),
              "conflicting parameter \"delay=2\"" + in);

    // every parameter at once
    rrl::LimitConf all;
    EXPECT_EQ(parse({"zone=z", "cost=$c", "settle=$s", "delay=2"}, all), "");
    EXPECT_EQ(all.variable, "$c");
    EXPECT_EQ(all.settle, "$s");
    EXPECT_EQ(all.delay, 2u);
}

std::string fail_parse(bool local, const std::vector<std::string_view>& words,
                       rrl::FailConf& conf) {
    conf.local = local;
    return rrl_test::parse_words(
        words,
        [&](std::string_view w) { return rrl::fail_conf_word(conf, kFail, w); },
        [&] { return rrl::fail_conf_done(conf, kFail); });
}

std::string fail_error(bool local, const std::vector<std::string_view>& words) {
    rrl::FailConf conf;
    return fail_parse(local, words, conf);
}

TEST(FailConf, LocalParameters) {
    rrl::FailConf conf;
    EXPECT_EQ(fail_parse(true, {"local_share=1/4", "local_zone=l:1m"}, conf),
              "");
    EXPECT_EQ(conf.share, 4u);
    EXPECT_EQ(conf.zone_word, "local_zone=l:1m");

    rrl::FailConf plain;
    EXPECT_EQ(fail_parse(true, {}, plain), "");
    EXPECT_EQ(plain.share, 1u);
    EXPECT_TRUE(plain.zone_word.empty());

    rrl::FailConf open;
    EXPECT_EQ(fail_parse(false, {}, open), "");
    EXPECT_EQ(open.share, 1u);
}

TEST(FailConf, Errors) {
    EXPECT_EQ(fail_error(true, {"foo=1"}),
              "invalid parameter \"foo=1\" in \"redis_ratelimit_fail\" "
              "directive");
    EXPECT_EQ(fail_error(false, {"local_share=1/2"}),
              "invalid parameter \"local_share=1/2\" in "
              "\"redis_ratelimit_fail\" directive, it is only valid with "
              "\"local\"");
    EXPECT_EQ(fail_error(true, {"local_zone=a:1m", "local_zone=b:1m"}),
              "duplicate parameter \"local_zone=b:1m\" in "
              "\"redis_ratelimit_fail\" directive");
    const std::string n =
        " in \"redis_ratelimit_fail\" directive, local_share must be 1/N with "
        "N a positive number";
    EXPECT_EQ(fail_error(true, {"local_share=1/0"}),
              "invalid value \"1/0\"" + n);
    EXPECT_EQ(fail_error(true, {"local_share=2/3"}),
              "invalid value \"2/3\"" + n);
    EXPECT_EQ(fail_error(true, {"local_share=1/"}), "invalid value \"1/\"" + n);
    EXPECT_EQ(fail_error(true, {"local_share=1/x"}),
              "invalid value \"1/x\"" + n);
    EXPECT_EQ(fail_error(true, {"local_share="}), "invalid value \"\"" + n);
}

int c_word(rrl_conf_t* conf, const char* word) {
    return rrl_conf_word(conf, word, std::strlen(word));
}

TEST(LimitConfCApi, Words) {
    rrl_conf_t conf;
    const rrl_limit_conf_t& l = conf.u.limit;
    rrl_conf_init(&conf, RRL_CONF_LIMIT, kLimit);
    EXPECT_EQ(l.cost, 1u);
    EXPECT_EQ(std::string(l.cost_arg.data, l.cost_arg.len), "1");
    EXPECT_EQ(c_word(&conf, "zone=z"), RRL_OK);
    EXPECT_EQ(l.settle.len, 0u);
    EXPECT_EQ(c_word(&conf, "cost=$c"), RRL_CONF_HOST);
    EXPECT_EQ(l.host_word, RRL_CONF_HOST_COST);
    EXPECT_EQ(std::string(l.variable.data, l.variable.len), "$c");
    EXPECT_EQ(c_word(&conf, "settle=$u"), RRL_CONF_HOST);
    EXPECT_EQ(l.host_word, RRL_CONF_HOST_SETTLE);
    EXPECT_EQ(std::string(l.settle.data, l.settle.len), "$u");
    EXPECT_EQ(c_word(&conf, "settle=$v"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "duplicate parameter \"settle=$v\" in \"redis_ratelimit\" "
                 "directive");
    // issue 25: a constant cost after cost=$c is a second cost
    EXPECT_EQ(c_word(&conf, "cost=7"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "duplicate parameter \"cost=7\" in \"redis_ratelimit\" "
                 "directive");
    EXPECT_EQ(l.cost, 1u);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(std::string(l.zone_name.data, l.zone_name.len), "z");

    rrl_conf_init(&conf, RRL_CONF_LIMIT, kLimit);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_ERROR);
    EXPECT_STREQ(conf.err, "\"redis_ratelimit\" must have \"zone\" parameter");
}

TEST(FailConfCApi, Words) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_FAIL, kFail);
    conf.u.fail.local = 1;
    EXPECT_EQ(c_word(&conf, "local_share=1/3"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.fail.share, 3u);
    EXPECT_EQ(conf.u.fail.zone_word.len, 0u);

    rrl_conf_init(&conf, RRL_CONF_FAIL, kFail);
    EXPECT_EQ(conf.u.fail.local, 0);
    EXPECT_EQ(c_word(&conf, "local_zone=a:1m"), RRL_ERROR);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.fail.share, 1u);
}

TEST(StatusConf, FromFourHundredTo599) {
    std::uint64_t status = 0;
    EXPECT_EQ(rrl::status_conf(status, "redis_ratelimit_status", "400"), "");
    EXPECT_EQ(status, 400u);
    EXPECT_EQ(rrl::status_conf(status, "redis_ratelimit_status", "599"), "");
    EXPECT_EQ(status, 599u);
    for (const char* bad : {"399", "600", "slow", ""}) {
        EXPECT_EQ(rrl::status_conf(status, "redis_ratelimit_status", bad),
                  "invalid value \"" + std::string(bad) +
                      "\" in \"redis_ratelimit_status\" directive, it must be "
                      "a status code from 400 to 599");
    }
    EXPECT_EQ(status, 599u);
}

TEST(StatusConfCApi, Word) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_VALUE, "redis_ratelimit_status");
    EXPECT_EQ(c_word(&conf, "503"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.value, 503u);
    EXPECT_EQ(c_word(&conf, "99"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid value \"99\" in \"redis_ratelimit_status\" "
                 "directive, it must be a status code from 400 to 599");
}

TEST(ConfWord, NumbersAsNginxReadsThem) {
    EXPECT_EQ(rrl::parse_conf_number("0"), 0);
    EXPECT_EQ(rrl::parse_conf_number("007"), 7);
    EXPECT_EQ(rrl::parse_conf_number("9223372036854775807"), INT64_MAX);
    EXPECT_FALSE(rrl::parse_conf_number("9223372036854775808"));
    EXPECT_FALSE(rrl::parse_conf_number(""));
    EXPECT_FALSE(rrl::parse_conf_number("+1"));
    EXPECT_FALSE(rrl::parse_conf_number("1 "));
}

}  // namespace

namespace {

TEST(LimitConf, DelayAndNodelay) {
    rrl::LimitConf conf;
    EXPECT_EQ(conf.delay, RRL_DELAY_NONE);
    EXPECT_EQ(parse({"zone=z", "delay=0"}, conf), "");
    EXPECT_EQ(conf.delay, 0u);
    EXPECT_EQ(conf.delay_word, "delay=0");

    rrl::LimitConf nodelay;
    EXPECT_EQ(parse({"nodelay", "zone=z"}, nodelay), "");
    EXPECT_EQ(nodelay.delay, RRL_DELAY_NONE);

    EXPECT_EQ(limit_error({"zone=z", "delay=3", "delay=3"}),
              "duplicate parameter \"delay=3\" in \"redis_ratelimit\" "
              "directive");
    EXPECT_EQ(limit_error({"zone=z", "nodelay", "nodelay"}),
              "duplicate parameter \"nodelay\" in \"redis_ratelimit\" "
              "directive");
    EXPECT_EQ(limit_error({"zone=z", "delay=3", "nodelay"}),
              "conflicting parameter \"nodelay\" in \"redis_ratelimit\" "
              "directive");
    // issue 25: delay= twice is a duplicate, as any parameter twice
    EXPECT_EQ(limit_error({"zone=z", "delay=3", "delay=4"}),
              "duplicate parameter \"delay=4\" in \"redis_ratelimit\" "
              "directive");
    EXPECT_EQ(limit_error({"zone=z", "delay=-1"}),
              "invalid value \"delay=-1\" in \"redis_ratelimit\" directive, "
              "delay must be a number");
    EXPECT_EQ(limit_error({"zone=z", "delay="}),
              "invalid value \"delay=\" in \"redis_ratelimit\" directive, "
              "delay must be a number");
}

TEST(LimitConf, DelayAgainstTheZone) {
    EXPECT_EQ(rrl::limit_delay_check(RRL_DELAY_NONE, RRL_FIXED_WINDOW, 0, "z",
                                     kLimit),
              "");
    EXPECT_EQ(rrl::limit_delay_check(5, RRL_LEAKY_BUCKET, 5, "z", kLimit), "");
    EXPECT_EQ(rrl::limit_delay_check(0, RRL_LEAKY_BUCKET, 0, "z", kLimit), "");
    EXPECT_EQ(rrl::limit_delay_check(6, RRL_LEAKY_BUCKET, 5, "z", kLimit),
              "\"delay=6\" is more than the burst (5) of zone \"z\" in "
              "\"redis_ratelimit\" directive");
    EXPECT_EQ(rrl::limit_delay_check(0, RRL_FIXED_WINDOW, 5, "z", kLimit),
              "\"delay=0\" is only valid with algorithm=leaky_bucket (gcra), "
              "zone \"z\" uses fixed_window, in \"redis_ratelimit\" "
              "directive");

    char err[RRL_CONF_ERR_MAX + 1];
    EXPECT_EQ(
        rrl_limit_check(1, 9, 2, RRL_LEAKY_BUCKET, 2, "z", 1, kLimit, err),
        RRL_OK);
    EXPECT_EQ(
        rrl_limit_check(1, 9, 3, RRL_TOKEN_BUCKET, 9, "z", 1, kLimit, err),
        RRL_ERROR);
    EXPECT_STREQ(err,
                 "\"delay=3\" is only valid with algorithm=leaky_bucket "
                 "(gcra), zone \"z\" uses token_bucket, in "
                 "\"redis_ratelimit\" directive");
}

TEST(LimitConf, CostAgainstTheZone) {
    EXPECT_EQ(rrl::limit_check(10, 10, RRL_DELAY_NONE, RRL_FIXED_WINDOW, 0, "z",
                               kLimit),
              "");
    EXPECT_EQ(rrl::limit_check(0, 10, RRL_DELAY_NONE, RRL_FIXED_WINDOW, 0, "z",
                               kLimit),
              "");
    EXPECT_EQ(rrl::limit_check(11, 10, 99, RRL_FIXED_WINDOW, 0, "z", kLimit),
              "cost=11 is more than zone \"z\" can ever allow (10) in "
              "\"redis_ratelimit\" directive");
    // then delay=D's
    EXPECT_EQ(rrl::limit_check(1, 10, 6, RRL_LEAKY_BUCKET, 5, "z", kLimit),
              "\"delay=6\" is more than the burst (5) of zone \"z\" in "
              "\"redis_ratelimit\" directive");
    char err[RRL_CONF_ERR_MAX + 1];
    EXPECT_EQ(rrl_limit_check(11, 10, RRL_DELAY_NONE, RRL_FIXED_WINDOW, 0, "z",
                              1, kLimit, err),
              RRL_ERROR);
    EXPECT_STREQ(err,
                 "cost=11 is more than zone \"z\" can ever allow (10) in "
                 "\"redis_ratelimit\" directive");
}

TEST(LimitConfCApi, Delay) {
    rrl_conf_t conf;
    const rrl_limit_conf_t& l = conf.u.limit;
    rrl_conf_init(&conf, RRL_CONF_LIMIT, kLimit);
    EXPECT_EQ(l.delay, RRL_DELAY_NONE);
    EXPECT_EQ(c_word(&conf, "zone=z"), RRL_OK);
    EXPECT_EQ(c_word(&conf, "delay=4"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(l.delay, 4u);
    EXPECT_EQ(c_word(&conf, "nodelay"), RRL_ERROR);
}

}  // namespace
