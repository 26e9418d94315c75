// rrl::server_conf_word / _done and their C API: the grammar and the
// cross-checks of "redis_ratelimit_server", messages as nginx -t prints
// them (t/config.t checks them with FILE:LINE).
#include "conf/server_conf.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/unit/conf/conf_parse.hpp"
#include "script/rate.hpp"
#include "api/rrl_conf.h"

namespace {

constexpr const char* kDirective = "redis_ratelimit_server";

std::optional<std::uint64_t> time_ms(std::string_view text) {
    return rrl::parse_time_ms(text);
}

// The words through the C++ API: the first error, or "" and conf.
std::string parse(const std::vector<std::string_view>& words,
                  rrl::ServerConf& conf, std::size_t* addresses = nullptr) {
    return rrl_test::parse_words(
        words,
        [&](std::string_view w) {
            return rrl::server_conf_word(conf, kDirective, w, time_ms);
        },
        [&] { return rrl::server_conf_done(conf, kDirective); }, addresses);
}

std::string error_of(const std::vector<std::string_view>& words) {
    rrl::ServerConf conf;
    return parse(words, conf);
}

TEST(ServerConf, Defaults) {
    rrl::ServerConf conf;
    std::size_t addresses = 0;
    EXPECT_EQ(parse({"127.0.0.1:6379"}, conf, &addresses), "");
    EXPECT_EQ(addresses, 1u);
    EXPECT_EQ(conf.mode, rrl::ServerMode::single);
    EXPECT_EQ(conf.timeout_ms, 100u);
    EXPECT_EQ(conf.connect_timeout_ms, 100u);
    EXPECT_EQ(conf.cooldown_ms, 500u);
    EXPECT_EQ(conf.max_failures, 5u);
    EXPECT_EQ(conf.max_parked, 1000u);
    EXPECT_EQ(conf.db, 0);
    EXPECT_TRUE(conf.password.empty());
}

TEST(ServerConf, EveryParameter) {
    rrl::ServerConf conf;
    EXPECT_EQ(parse({"a:1", "b:2", "c", "sentinel=mymaster", "timeout=50ms",
                     "connect_timeout=1s", "cooldown=2s", "max_failures=3",
                     "max_parked=7", "username=u", "password=p",
                     "sentinel_password=sp", "db=3"},
                    conf),
              "");
    EXPECT_EQ(conf.addresses, 3u);
    EXPECT_EQ(conf.mode, rrl::ServerMode::sentinel);
    EXPECT_EQ(conf.sentinel_name, "mymaster");
    EXPECT_EQ(conf.timeout_ms, 50u);
    EXPECT_EQ(conf.connect_timeout_ms, 1000u);
    EXPECT_EQ(conf.cooldown_ms, 2000u);
    EXPECT_EQ(conf.max_failures, 3u);
    EXPECT_EQ(conf.max_parked, 7u);
    EXPECT_EQ(conf.username, "u");
    EXPECT_EQ(conf.password, "p");
    EXPECT_EQ(conf.sentinel_password, "sp");
    EXPECT_EQ(conf.db, 3);
}

TEST(ServerConf, Cluster) {
    rrl::ServerConf conf;
    EXPECT_EQ(parse({"a:1", "b:2", "[::1]:3", "cluster", "password=x"}, conf),
              "");
    EXPECT_EQ(conf.mode, rrl::ServerMode::cluster);
    EXPECT_EQ(conf.addresses, 3u);
    EXPECT_EQ(conf.db, 0);
}

TEST(ServerConf, AddressesEndAtAnEqualsSignOrCluster) {
    rrl::ServerConf conf;
    EXPECT_TRUE(
        rrl::server_conf_word(conf, kDirective, "unix:/a", time_ms).host);
    EXPECT_FALSE(
        rrl::server_conf_word(conf, kDirective, "cluster", time_ms).host);
    EXPECT_EQ(
        rrl::server_conf_word(conf, kDirective, "127.0.0.1:7001", time_ms)
            .error,
        "invalid parameter \"127.0.0.1:7001\" in \"redis_ratelimit_server\" "
        "directive");
}

TEST(ServerConf, NumberErrors) {
    EXPECT_EQ(error_of({"a", "timeout=0"}),
              "invalid timeout \"timeout=0\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"a", "connect_timeout=soon"}),
              "invalid timeout \"connect_timeout=soon\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "cooldown="}),
              "invalid cooldown \"cooldown=\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"a", "max_failures=0"}),
              "invalid number \"max_failures=0\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "max_parked=-1"}),
              "invalid number \"max_parked=-1\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "db=x"}),
              "invalid db \"db=x\" in \"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "db=99999999999999999999"}),
              "invalid db \"db=99999999999999999999\" in "
              "\"redis_ratelimit_server\" directive");
}

TEST(ServerConf, ParameterErrors) {
    EXPECT_EQ(error_of({"a", "foo=1"}),
              "invalid parameter \"foo=1\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"cluster"}),
              "no address in \"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"timeout=1s"}),
              "no address in \"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "cluster", "sentinel=m"}),
              "invalid parameter \"sentinel=m\" in \"redis_ratelimit_server\" "
              "directive, \"cluster\" and \"sentinel=\" exclude each other");
    EXPECT_EQ(error_of({"a", "sentinel=m", "cluster"}),
              "invalid parameter \"cluster\" in \"redis_ratelimit_server\" "
              "directive, \"cluster\" and \"sentinel=\" exclude each other");
    EXPECT_EQ(error_of({"a", "sentinel="}),
              "invalid parameter \"sentinel=\" in \"redis_ratelimit_server\" "
              "directive, sentinel= needs the name of the primary");
}

TEST(ServerConf, CrossChecks) {
    EXPECT_EQ(error_of({"a", "b"}),
              "several addresses in \"redis_ratelimit_server\" directive need "
              "\"cluster\" or \"sentinel=NAME\"");
    EXPECT_EQ(error_of({"a", "cluster", "db=1"}),
              "\"db=\" cannot be used with \"cluster\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "db=0", "cluster"}),
              "\"db=\" cannot be used with \"cluster\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "sentinel_password=x"}),
              "\"sentinel_password=\" needs \"sentinel=NAME\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"a", "username=u"}),
              "\"username=\" needs \"password=\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"a", "db=0"}), "");
}

// the C API, with a time parser as the shim's (-1: not a time)
int64_t c_time(const char* text, size_t len) {
    auto ms = rrl::parse_time_ms({text, len});
    return ms ? static_cast<int64_t>(*ms) : -1;
}

struct CConf {
    rrl_conf_t c;
    explicit CConf(rrl_time_parse_pt parse_time = c_time) {
        rrl_conf_init(&c, RRL_CONF_SERVER, kDirective);
        c.parse_time = parse_time;
    }
    int word(const char* w) { return rrl_conf_word(&c, w, std::strlen(w)); }
    int done() { return rrl_conf_done(&c); }
};

// issue 25: a parameter given twice was taken silently, the last winning
// ("cluster" twice said the two modes exclude each other)
TEST(ServerConf, EachParameterOnce) {
    const std::vector<std::pair<std::string_view, std::string_view>> twice = {
        {"timeout=1s", "timeout=2s"},
        {"connect_timeout=1s", "connect_timeout=1s"},
        {"cooldown=1s", "cooldown=2s"},
        {"max_failures=1", "max_failures=2"},
        {"max_parked=1", "max_parked=2"},
        {"cluster", "cluster"},
        {"sentinel=m", "sentinel=n"},
        {"tls", "tls"},
        {"tls_ca=a.pem", "tls_ca=b.pem"},
        {"tls_cert=a.pem", "tls_cert=b.pem"},
        {"tls_key=a.pem", "tls_key=b.pem"},
        {"tls_server_name=a", "tls_server_name=b"},
        {"tls_verify=on", "tls_verify=off"},
        {"sentinel_tls=on", "sentinel_tls=on"},
        {"password=a", "password=b"},
        {"username=a", "username=b"},
        {"sentinel_password=a", "sentinel_password=b"},
        {"db=1", "db=2"},
    };
    for (const auto& [first, second] : twice) {
        EXPECT_EQ(error_of({"a", first, "password=p0", second}),
                  first == "password=a"
                      ? "duplicate parameter \"password=p0\" in "
                        "\"redis_ratelimit_server\" directive"
                      : "duplicate parameter \"" + std::string(second) +
                            "\" in \"redis_ratelimit_server\" directive")
            << first;
    }
    // a duplicate, before its value is judged
    EXPECT_EQ(error_of({"a", "timeout=1s", "timeout=0"}),
              "duplicate parameter \"timeout=0\" in "
              "\"redis_ratelimit_server\" directive");
    // through the C API, whose struct keeps what was seen
    CConf c;
    EXPECT_EQ(c.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(c.word("db=1"), RRL_OK);
    EXPECT_EQ(c.word("db=1"), RRL_ERROR);
    EXPECT_STREQ(c.c.err,
                 "duplicate parameter \"db=1\" in \"redis_ratelimit_server\" "
                 "directive");
}

TEST(ServerConfCApi, ParsesAndReportsAddresses) {
    CConf conf;
    const rrl_server_conf_t& s = conf.c.u.server;
    EXPECT_EQ(s.db, -1);
    EXPECT_EQ(s.timeout_ms, 100u);

    EXPECT_EQ(conf.word("127.0.0.1:26379"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("localhost:26380"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("sentinel=m"), RRL_OK);
    EXPECT_EQ(conf.word("timeout=250ms"), RRL_OK);
    EXPECT_EQ(conf.word("password=p"), RRL_OK);
    EXPECT_EQ(conf.word("db=4"), RRL_OK);
    EXPECT_EQ(conf.done(), RRL_OK);

    EXPECT_EQ(s.mode, RRL_SERVER_SENTINEL);
    EXPECT_EQ(s.addresses, 2u);
    EXPECT_EQ(s.timeout_ms, 250u);
    EXPECT_EQ(s.db, 4);
    EXPECT_EQ(std::string(s.sentinel_name.data, s.sentinel_name.len), "m");
    EXPECT_EQ(std::string(s.password.data, s.password.len), "p");
    EXPECT_EQ(s.username.len, 0u);
}

// What the engine is given of the directive, made once at configuration.
TEST(ServerConfCApi, TheEnginesConf) {
    CConf conf;
    for (const char* w :
         {"sentinel=m", "timeout=250ms", "connect_timeout=40ms", "cooldown=3s",
          "max_failures=7", "max_parked=9", "username=u", "password=p",
          "sentinel_password=sp", "db=4"}) {
        if (std::string(w) == "sentinel=m") {
            ASSERT_EQ(conf.word("127.0.0.1:26379"), RRL_CONF_HOST);
        }
        ASSERT_EQ(conf.word(w), RRL_OK) << w;
    }
    ASSERT_EQ(conf.done(), RRL_OK);
    const rrl_server_conf_t& s = conf.c.u.server;
    rrl_engine_conf_t e;
    std::memset(&e, 0xff, sizeof(e));
    rrl_server_engine_conf(&s, &e);
    EXPECT_EQ(e.mode, RRL_SERVER_SENTINEL);
    EXPECT_EQ(e.sentinel_name, s.sentinel_name.data);
    EXPECT_EQ(std::string(e.sentinel_name, e.sentinel_name_len), "m");
    EXPECT_EQ(std::string(e.username, e.username_len), "u");
    EXPECT_EQ(std::string(e.password, e.password_len), "p");
    EXPECT_EQ(std::string(e.sentinel_password, e.sentinel_password_len), "sp");
    EXPECT_EQ(e.db, 4u);
    EXPECT_EQ(e.timeout_ms, 250u);
    EXPECT_EQ(e.connect_timeout_ms, 40u);
    EXPECT_EQ(e.cooldown_ms, 3000u);
    EXPECT_EQ(e.max_failures, 7u);
    EXPECT_EQ(e.max_parked, 9u);
    EXPECT_EQ(e.tls_server_name_len, 0u);
    // the shim's: none given here
    EXPECT_EQ(e.addrs, nullptr);
    EXPECT_EQ(e.naddrs, 0u);
    EXPECT_EQ(e.server, nullptr);
    EXPECT_EQ(e.sha, nullptr);
    EXPECT_EQ(e.tls, nullptr);
    EXPECT_EQ(e.sentinel_tls, nullptr);
}

TEST(ServerConfCApi, DbDefaultsToZero) {
    CConf conf;
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("cluster"), RRL_OK);
    EXPECT_EQ(conf.done(), RRL_OK);
    EXPECT_EQ(conf.c.u.server.mode, RRL_SERVER_CLUSTER);
    EXPECT_EQ(conf.c.u.server.db, 0);
}

TEST(ServerConfCApi, Errors) {
    CConf conf;
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("foo=1"), RRL_ERROR);
    EXPECT_STREQ(conf.c.err,
                 "invalid parameter \"foo=1\" in \"redis_ratelimit_server\" "
                 "directive");

    CConf two;
    EXPECT_EQ(two.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(two.word("b"), RRL_CONF_HOST);
    EXPECT_EQ(two.done(), RRL_ERROR);
    EXPECT_STREQ(two.c.err,
                 "several addresses in \"redis_ratelimit_server\" directive "
                 "need \"cluster\" or \"sentinel=NAME\"");
}

// a message longer than the buffer (a long word) is cut, NUL-terminated
TEST(ServerConfCApi, LongMessagesAreCut) {
    CConf conf;
    std::string word = "foo=" + std::string(2000, 'x');
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(rrl_conf_word(&conf.c, word.data(), word.size()), RRL_ERROR);
    EXPECT_EQ(std::strlen(conf.c.err), size_t{RRL_CONF_ERR_MAX});
    EXPECT_EQ(std::string(conf.c.err, 19), "invalid parameter \"");
}

// nginx's ngx_parse_time() may read what the core's parser does not
TEST(ServerConfCApi, TimesAreTheHostsToRead) {
    CConf conf([](const char*, size_t) -> int64_t { return 42; });
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("timeout=1M"), RRL_OK);
    EXPECT_EQ(conf.c.u.server.timeout_ms, 42u);
}

// an exception never crosses the C API: the directive fails
TEST(ServerConfCApi, AnExceptionFailsTheDirective) {
    CConf conf([](const char*, size_t) -> int64_t {
        throw std::runtime_error("thrown");
    });
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("timeout=1s"), RRL_ERROR);
    EXPECT_STREQ(conf.c.err, "internal error, see the log");
}

}  // namespace

// TLS: "tls" ends the addresses as "cluster" does; its settings need it
TEST(ServerConf, TlsParameters) {
    rrl::ServerConf conf;
    std::string error =
        parse({"a:1", "b:2", "tls", "sentinel=m", "tls_ca=/ca.pem",
               "tls_cert=/c.pem", "tls_key=/k.pem", "tls_server_name=r.example",
               "tls_verify=off", "sentinel_tls=off"},
              conf);
    if (!rrl::tls_built()) {
        EXPECT_EQ(error,
                  "\"tls\" in \"redis_ratelimit_server\" directive needs a "
                  "module built with hiredis >= 1.0 with TLS (hiredis_ssl); "
                  "this one was built without it");
        return;
    }
    EXPECT_EQ(error, "");
    EXPECT_EQ(conf.addresses, 2u);
    EXPECT_TRUE(conf.tls);
    EXPECT_EQ(conf.tls_ca, "/ca.pem");
    EXPECT_EQ(conf.tls_cert, "/c.pem");
    EXPECT_EQ(conf.tls_key, "/k.pem");
    EXPECT_EQ(conf.tls_server_name, "r.example");
    EXPECT_EQ(conf.tls_verify, false);
    EXPECT_EQ(conf.sentinel_tls, false);
}

TEST(ServerConf, TlsDefaults) {
    rrl::ServerConf plain;
    EXPECT_EQ(parse({"a"}, plain), "");
    EXPECT_FALSE(plain.tls);
    EXPECT_EQ(plain.tls_verify, true);
    EXPECT_EQ(plain.sentinel_tls, false);

    if (!rrl::tls_built()) return;
    rrl::ServerConf conf;
    EXPECT_EQ(parse({"a", "b", "sentinel=m", "tls"}, conf), "");
    EXPECT_EQ(conf.tls_verify, true);
    EXPECT_EQ(conf.sentinel_tls, true);
    EXPECT_TRUE(conf.tls_ca.empty());
    EXPECT_TRUE(conf.tls_server_name.empty());
}

TEST(ServerConf, TlsErrors) {
    EXPECT_EQ(
        error_of({"a", "tls_verify=maybe"}),
        "invalid value \"tls_verify=maybe\" in \"redis_ratelimit_server\" "
        "directive, it must be \"on\" or \"off\"");
    EXPECT_EQ(error_of({"a", "sentinel_tls=1"}),
              "invalid value \"sentinel_tls=1\" in \"redis_ratelimit_server\" "
              "directive, it must be \"on\" or \"off\"");
    EXPECT_EQ(error_of({"a", "tls_ca="}),
              "invalid parameter \"tls_ca=\" in \"redis_ratelimit_server\" "
              "directive");
    for (const char* word :
         {"tls_ca=/x", "tls_cert=/x", "tls_key=/x", "tls_server_name=x",
          "tls_verify=on", "sentinel_tls=off"}) {
        std::string name(word, std::strchr(word, '=') + 1);
        EXPECT_EQ(error_of({"a", word}),
                  "\"" + name +
                      "\" needs \"tls\" in "
                      "\"redis_ratelimit_server\" directive")
            << word;
    }
    EXPECT_EQ(error_of({"a", "tls", "tls_cert=/c"}),
              "\"tls_cert=\" needs \"tls_key=\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"a", "tls", "tls_key=/k"}),
              "\"tls_key=\" needs \"tls_cert=\" in \"redis_ratelimit_server\" "
              "directive");
    EXPECT_EQ(error_of({"a", "tls", "sentinel_tls=off"}),
              "\"sentinel_tls=\" needs \"sentinel=NAME\" in "
              "\"redis_ratelimit_server\" directive");
    EXPECT_EQ(error_of({"tls"}),
              "no address in \"redis_ratelimit_server\" directive");
}

TEST(ServerConfCApi, Tls) {
    CConf conf;
    EXPECT_EQ(conf.c.u.server.tls_verify, -1);
    EXPECT_EQ(conf.word("a"), RRL_CONF_HOST);
    EXPECT_EQ(conf.word("tls"), RRL_OK);
    EXPECT_EQ(conf.word("tls_server_name=n"), RRL_OK);
    if (!rrl::tls_built()) {
        EXPECT_EQ(conf.done(), RRL_ERROR);
        return;
    }
    EXPECT_EQ(conf.done(), RRL_OK);
    const rrl_server_conf_t& s = conf.c.u.server;
    EXPECT_EQ(s.tls, 1);
    EXPECT_EQ(s.tls_verify, 1);
    EXPECT_EQ(s.sentinel_tls, 1);
    EXPECT_EQ(std::string(s.tls_server_name.data, s.tls_server_name.len), "n");
    rrl_engine_conf_t e;
    rrl_server_engine_conf(&s, &e);
    EXPECT_EQ(std::string(e.tls_server_name, e.tls_server_name_len), "n");
    EXPECT_EQ(e.tls, nullptr);  // the shim's, once made
}
