// The grammar of "redis_ratelimit_server ADDRESS... [cluster |
// sentinel=NAME] [timeout=T] [connect_timeout=T] [username=U] [password=P]
// [sentinel_password=P] [db=N] [max_failures=N] [cooldown=T]
// [max_parked=N] [tls] [tls_ca=FILE] [tls_cert=FILE tls_key=FILE]
// [tls_server_name=NAME] [tls_verify=on|off] [sentinel_tls=on|off]" and its
// cross-checks. The addresses themselves are the
// host's to resolve: it is told which words are addresses.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "conf/conf_word.hpp"

namespace rrl {

enum class ServerMode { single = 0, cluster = 1, sentinel = 2 };

struct ServerConf {
    ServerMode mode = ServerMode::single;
    std::uint64_t timeout_ms = 100;
    std::uint64_t connect_timeout_ms = 100;
    std::uint64_t cooldown_ms = 500;  // circuit breaker: time without Redis
    std::uint64_t max_failures = 5;   // in a row, to open the circuit
    std::uint64_t max_parked = 1000;  // requests waiting, a worker
    std::optional<std::int64_t> db;   // 0 once done(), when not given
    std::string_view sentinel_name;
    std::string_view username;
    std::string_view password;
    std::string_view sentinel_password;
    std::size_t addresses = 0;
    bool parameters = false;  // the addresses are over

    // TLS, to the Redis and (unless sentinel_tls=off) to the sentinels
    bool tls = false;
    std::string_view tls_ca;    // "": the system's CAs
    std::string_view tls_cert;  // with tls_key: a client certificate
    std::string_view tls_key;
    std::string_view tls_server_name;  // "": each address's host
    std::optional<bool> tls_verify;    // on unless off; true once done()
    std::optional<bool> sentinel_tls;  // as tls unless off, once done()
    std::uint32_t seen = 0;            // the parameters given (once())
};

// Whether this build can speak TLS (hiredis >= 1.0 with hiredis_ssl).
bool tls_built();

// A time value in ms, as the host reads it (nginx: ngx_parse_time()), or
// nullopt when it is not one.
using TimeParser =
    std::function<std::optional<std::uint64_t>(std::string_view)>;

// Reads the next word of the directive (not its name); an address is the
// host's (ConfWord::host). Errors name the directive and the word.
ConfWord server_conf_word(ServerConf& conf, std::string_view directive,
                          std::string_view word, const TimeParser& parse_time);

// The cross-checks, after the last word; "" when the directive is good.
std::string server_conf_done(ServerConf& conf, std::string_view directive);

}  // namespace rrl
