// rrl::deny_cache_conf and rrl::local_zone_conf and their C API: the sizes
// of "redis_ratelimit_deny_cache" and of "local_zone=NAME:SIZE".
#include "conf/shm_conf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "api/rrl_conf.h"

namespace {

constexpr const char* kDeny = "redis_ratelimit_deny_cache";
constexpr const char* kFail = "redis_ratelimit_fail";
constexpr std::uint64_t kMin = 32 * 1024;

// digits with an optional k or m, as ngx_parse_size() (enough here)
std::int64_t parse_size(const char* text, size_t len) {
    std::string s(text, len);
    std::int64_t scale = 1;
    if (!s.empty() && (s.back() == 'k' || s.back() == 'm')) {
        scale = s.back() == 'k' ? 1024 : 1024 * 1024;
        s.pop_back();
    }
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) {
        return -1;
    }
    return std::stoll(s) * scale;
}

const rrl::SizeParser kParse = [](std::string_view text) {
    std::int64_t size = parse_size(text.data(), text.size());
    return size < 0
               ? std::nullopt
               : std::optional<std::uint64_t>(static_cast<std::uint64_t>(size));
};

TEST(DenyCacheConf, OffOrASize) {
    std::uint64_t size = 7;
    EXPECT_EQ(rrl::deny_cache_conf(size, kDeny, "off", kMin, kParse), "");
    EXPECT_EQ(size, 0u);
    EXPECT_EQ(rrl::deny_cache_conf(size, kDeny, "32k", kMin, kParse), "");
    EXPECT_EQ(size, kMin);

    const std::string tail =
        " in \"redis_ratelimit_deny_cache\" directive, it must be \"off\" or "
        "a size of at least 32k";
    for (const char* bad : {"16k", "0", "lots", "on"}) {
        EXPECT_EQ(rrl::deny_cache_conf(size, kDeny, bad, kMin, kParse),
                  "invalid value \"" + std::string(bad) + "\"" + tail);
    }
    EXPECT_EQ(size, kMin);
}

std::string local_error(const char* word) {
    rrl::LocalZoneConf zone;
    return rrl::local_zone_conf(zone, kFail, word, kMin, kParse);
}

TEST(LocalZoneConf, NameAndSize) {
    rrl::LocalZoneConf zone;
    EXPECT_EQ(
        rrl::local_zone_conf(zone, kFail, "local_zone=l:1m", kMin, kParse), "");
    EXPECT_EQ(zone.name, "l");
    EXPECT_EQ(zone.size_word, "1m");
    EXPECT_EQ(zone.size, 1024u * 1024);

    EXPECT_EQ(rrl::local_zone_conf(zone, kFail, "", kMin, kParse), "");
    EXPECT_EQ(zone.name, "redis_ratelimit_local");
    EXPECT_TRUE(zone.size_word.empty());
    EXPECT_EQ(zone.size, 0u);
}

TEST(LocalZoneConf, Errors) {
    const std::string form =
        "\" in \"redis_ratelimit_fail\" directive, it must be "
        "local_zone=NAME:SIZE";
    for (const char* bad : {"local_zone=l", "local_zone=:1m",
                            "local_zone=l:", "local_zone=l:big"}) {
        EXPECT_EQ(local_error(bad),
                  "invalid value \"" + std::string(bad) + form);
    }
    EXPECT_EQ(local_error("local_zone=l:16k"),
              "invalid value \"local_zone=l:16k\" in \"redis_ratelimit_fail\" "
              "directive, local_zone must be at least 32k");
    EXPECT_EQ(local_error("local_zone=redis_ratelimit_metrics:256k"),
              "invalid value \"local_zone=redis_ratelimit_metrics:256k\" in "
              "\"redis_ratelimit_fail\" directive, zone "
              "\"redis_ratelimit_metrics\" is the module's own");
    EXPECT_EQ(local_error("local_zone=redis_ratelimit_deny:1m"),
              "invalid value \"local_zone=redis_ratelimit_deny:1m\" in "
              "\"redis_ratelimit_fail\" directive, zone "
              "\"redis_ratelimit_deny\" is the module's own");
    // issue 25: the lease table's too
    EXPECT_EQ(local_error("local_zone=redis_ratelimit_lease:1m"),
              "invalid value \"local_zone=redis_ratelimit_lease:1m\" in "
              "\"redis_ratelimit_fail\" directive, zone "
              "\"redis_ratelimit_lease\" is the module's own");
}

// issue 25 (R2): "redis_ratelimit_lease_zone SIZE", the lease table's
// size: at least min_size (8 pages), as nginx's zones
TEST(LeaseZoneConf, ASizeOfAtLeastEightPages) {
    std::uint64_t size = 7;
    constexpr const char* kLease = "redis_ratelimit_lease_zone";
    EXPECT_EQ(rrl::lease_zone_conf(size, kLease, "32k", kMin, kParse), "");
    EXPECT_EQ(size, kMin);
    EXPECT_EQ(rrl::lease_zone_conf(size, kLease, "10m", kMin, kParse), "");
    EXPECT_EQ(size, 10u * 1024 * 1024);
    for (const char* bad : {"16k", "0", "off", "lots", ""}) {
        EXPECT_EQ(rrl::lease_zone_conf(size, kLease, bad, kMin, kParse),
                  "invalid zone size \"" + std::string(bad) +
                      "\" in \"redis_ratelimit_lease_zone\" directive, it "
                      "must be at least 32k");
    }
    EXPECT_EQ(size, 10u * 1024 * 1024);
}

int c_word(rrl_conf_t* conf, const char* word) {
    return rrl_conf_word(conf, word, std::strlen(word));
}

std::string str(rrl_conf_str_t s) {
    return {s.data, s.len};
}

TEST(ShmConfCApi, DenyCache) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_VALUE, kDeny);
    conf.parse_size = parse_size;
    conf.min_size = kMin;
    EXPECT_EQ(c_word(&conf, "1m"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.value, 1024u * 1024);
    EXPECT_EQ(c_word(&conf, "off"), RRL_OK);
    EXPECT_EQ(conf.u.value, 0u);
    EXPECT_EQ(c_word(&conf, "1k"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid value \"1k\" in \"redis_ratelimit_deny_cache\" "
                 "directive, it must be \"off\" or a size of at least 32k");
    EXPECT_EQ(c_word(&conf, "lots"), RRL_ERROR);
    EXPECT_EQ(conf.u.value, 0u);
}

TEST(ShmConfCApi, LocalZoneOfFail) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_FAIL, kFail);
    conf.parse_size = parse_size;
    conf.min_size = kMin;
    conf.u.fail.local = 1;
    EXPECT_EQ(c_word(&conf, "local_zone=l:64k"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(str(conf.u.fail.zone_name), "l");
    EXPECT_EQ(str(conf.u.fail.zone_size_word), "64k");
    EXPECT_EQ(conf.u.fail.zone_size, 64u * 1024);

    rrl_conf_init(&conf, RRL_CONF_FAIL, kFail);
    conf.u.fail.local = 1;
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(str(conf.u.fail.zone_name), "redis_ratelimit_local");
    EXPECT_EQ(conf.u.fail.zone_size, 0u);

    rrl_conf_init(&conf, RRL_CONF_FAIL, kFail);
    conf.parse_size = parse_size;
    conf.min_size = kMin;
    conf.u.fail.local = 1;
    EXPECT_EQ(c_word(&conf, "local_zone=l"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid value \"local_zone=l\" in \"redis_ratelimit_fail\" "
                 "directive, it must be local_zone=NAME:SIZE");
}

TEST(ShmConfCApi, LeaseZone) {
    rrl_conf_t conf;
    rrl_conf_init(&conf, RRL_CONF_VALUE, "redis_ratelimit_lease_zone");
    conf.parse_size = parse_size;
    conf.min_size = kMin;
    EXPECT_EQ(c_word(&conf, "64k"), RRL_OK);
    EXPECT_EQ(rrl_conf_done(&conf), RRL_OK);
    EXPECT_EQ(conf.u.value, 64u * 1024);
    EXPECT_EQ(c_word(&conf, "1k"), RRL_ERROR);
    EXPECT_STREQ(conf.err,
                 "invalid zone size \"1k\" in \"redis_ratelimit_lease_zone\" "
                 "directive, it must be at least 32k");
    EXPECT_EQ(RRL_CONF_LEASE_SIZE, 10 * 1024 * 1024);
    EXPECT_STREQ(RRL_CONF_LEASE_ZONE, "redis_ratelimit_lease");
}

}  // namespace
