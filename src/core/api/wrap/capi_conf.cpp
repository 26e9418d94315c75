// The extern "C" face of the directives' grammar: the C structs are
// copied to the core's and back around each word.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "api/wrap/capi.hpp"
#include "conf/limit_conf.hpp"
#include "api/rrl_conf.h"
#include "conf/server_conf.hpp"
#include "conf/shm_conf.hpp"
#include "conf/value_conf.hpp"
#include "conf/zone_conf.hpp"

using rrl::capi::guarded;

static_assert(static_cast<int>(rrl::ServerMode::single) == RRL_SERVER_SINGLE &&
              static_cast<int>(rrl::ServerMode::cluster) ==
                  RRL_SERVER_CLUSTER &&
              static_cast<int>(rrl::ServerMode::sentinel) ==
                  RRL_SERVER_SENTINEL);

static_assert(rrl::metrics_zone_name == RRL_CONF_METRICS_ZONE &&
              rrl::deny_zone_name == RRL_CONF_DENY_ZONE &&
              rrl::lease_zone_name == RRL_CONF_LEASE_ZONE);

namespace {

std::string_view view(const rrl_conf_str_t& s) {
    return {s.data, s.len};
}

rrl_conf_str_t str(std::string_view s) {
    return {s.data(), s.size()};
}

// the message, cut to the buffer and NUL-terminated
int error(const std::string& message, char* err) noexcept {
    size_t n = std::min(message.size(), size_t{RRL_CONF_ERR_MAX});
    message.copy(err, n);
    err[n] = '\0';
    return RRL_ERROR;
}

rrl::ServerConf to_cpp(const rrl_server_conf_t& c) {
    rrl::ServerConf s;
    s.mode = static_cast<rrl::ServerMode>(c.mode);
    s.timeout_ms = c.timeout_ms;
    s.connect_timeout_ms = c.connect_timeout_ms;
    s.cooldown_ms = c.cooldown_ms;
    s.max_failures = c.max_failures;
    s.max_parked = c.max_parked;
    if (c.db >= 0) s.db = c.db;
    s.sentinel_name = view(c.sentinel_name);
    s.username = view(c.username);
    s.password = view(c.password);
    s.sentinel_password = view(c.sentinel_password);
    s.addresses = c.addresses;
    s.parameters = c.parameters != 0;
    s.tls = c.tls != 0;
    s.tls_ca = view(c.tls_ca);
    s.tls_cert = view(c.tls_cert);
    s.tls_key = view(c.tls_key);
    s.tls_server_name = view(c.tls_server_name);
    if (c.tls_verify >= 0) s.tls_verify = c.tls_verify != 0;
    if (c.sentinel_tls >= 0) s.sentinel_tls = c.sentinel_tls != 0;
    s.seen = c.seen;
    return s;
}

void to_c(const rrl::ServerConf& s, rrl_server_conf_t* c) {
    c->mode = static_cast<int>(s.mode);
    c->timeout_ms = s.timeout_ms;
    c->connect_timeout_ms = s.connect_timeout_ms;
    c->cooldown_ms = s.cooldown_ms;
    c->max_failures = s.max_failures;
    c->max_parked = s.max_parked;
    c->db = s.db ? *s.db : -1;
    c->sentinel_name = str(s.sentinel_name);
    c->username = str(s.username);
    c->password = str(s.password);
    c->sentinel_password = str(s.sentinel_password);
    c->addresses = s.addresses;
    c->parameters = s.parameters ? 1 : 0;
    c->tls = s.tls ? 1 : 0;
    c->tls_ca = str(s.tls_ca);
    c->tls_cert = str(s.tls_cert);
    c->tls_key = str(s.tls_key);
    c->tls_server_name = str(s.tls_server_name);
    c->tls_verify = s.tls_verify ? (*s.tls_verify ? 1 : 0) : -1;
    c->sentinel_tls = s.sentinel_tls ? (*s.sentinel_tls ? 1 : 0) : -1;
    c->seen = s.seen;
}

rrl::ZoneConf to_cpp(const rrl_zone_conf_t& c) {
    rrl::ZoneConf z;
    z.name = view(c.name);
    z.rate = view(c.rate);
    z.algorithm = c.algorithm;
    z.limit = c.limit;
    z.period_ms = c.period_ms;
    z.burst = c.burst;
    z.capacity = c.capacity;
    z.overrides = c.overrides != 0;
    z.lease = c.lease;
    z.seen = c.seen;
    return z;
}

void to_c(const rrl::ZoneConf& z, rrl_zone_conf_t* c) {
    *c = {};
    c->name = str(z.name);
    c->rate = str(z.rate);
    c->algorithm = z.algorithm;
    c->limit = z.limit;
    c->period_ms = z.period_ms;
    c->burst = z.burst;
    c->capacity = z.capacity;
    c->overrides = z.overrides ? 1 : 0;
    c->lease = z.lease;
    c->seen = z.seen;
}

rrl::LimitConf to_cpp(const rrl_limit_conf_t& c) {
    return {view(c.zone_name), c.cost,      view(c.cost_arg),
            view(c.variable),  c.delay,     view(c.delay_word),
            view(c.settle),    c.host_word, c.seen};
}

void to_c(const rrl::LimitConf& l, rrl_limit_conf_t* c) {
    *c = {str(l.zone_name), l.cost,      str(l.cost_arg),
          str(l.variable),  l.delay,     str(l.delay_word),
          str(l.settle),    l.host_word, l.seen};
}

// the local zone is the C API's: set at done, from zone_word
struct FailStep {
    rrl::FailConf fail;
    rrl::LocalZoneConf zone;
};

FailStep to_cpp(const rrl_fail_conf_t& c) {
    return {{c.local != 0, view(c.zone_word), view(c.share_word), c.share},
            {view(c.zone_name), view(c.zone_size_word), c.zone_size}};
}

void to_c(const FailStep& f, rrl_fail_conf_t* c) {
    *c = {f.fail.local ? 1 : 0, str(f.fail.zone_word), str(f.fail.share_word),
          f.fail.share,         str(f.zone.name),      str(f.zone.size_word),
          f.zone.size};
}

rrl::SizeParser size_parser(rrl_size_parse_pt parse_size) {
    return [parse_size](std::string_view text) {
        int64_t size = parse_size(text.data(), text.size());
        return size < 0 ? std::nullopt
                        : std::optional<uint64_t>(static_cast<uint64_t>(size));
    };
}

// Runs body on the core's copy of *conf, copied back when the word is good.
template <typename C, typename F>
int step(C* conf, char* err, F&& body) {
    auto cpp = to_cpp(*conf);
    rrl::ConfWord r = body(cpp);
    if (!r.error.empty()) return error(r.error, err);
    to_c(cpp, conf);
    return r.host ? RRL_CONF_HOST : RRL_OK;
}

int error_or_ok(const std::string& message, char* err) noexcept {
    return message.empty() ? RRL_OK : error(message, err);
}

// a check's message as a word's
rrl::ConfWord checked(std::string message) {
    return {false, message};
}

int word(rrl_conf_t* c, std::string_view w) {
    std::string_view d = c->directive;
    switch (c->kind) {
        case RRL_CONF_SERVER: {
            rrl_time_parse_pt parse_time = c->parse_time;
            rrl::TimeParser time = [parse_time](std::string_view text) {
                int64_t ms = parse_time(text.data(), text.size());
                return ms == -1
                           ? std::nullopt
                           : std::optional<uint64_t>(static_cast<uint64_t>(ms));
            };
            return step(&c->u.server, c->err, [&](auto& s) {
                return rrl::server_conf_word(s, d, w, time);
            });
        }
        case RRL_CONF_ZONE:
            return step(&c->u.zone, c->err, [&](auto& z) {
                return checked(rrl::zone_conf_word(z, d, w));
            });
        case RRL_CONF_LIMIT:
            return step(&c->u.limit, c->err,
                        [&](auto& l) { return rrl::limit_conf_word(l, d, w); });
        case RRL_CONF_VALUE:
            return error_or_ok(rrl::value_conf(c->u.value, d, w, c->min_size,
                                               size_parser(c->parse_size)),
                               c->err);
        default:
            return step(&c->u.fail, c->err, [&](auto& f) {
                return checked(rrl::fail_conf_word(f.fail, d, w));
            });
    }
}

int done(rrl_conf_t* c) {
    std::string_view d = c->directive;
    switch (c->kind) {
        case RRL_CONF_SERVER:
            return step(&c->u.server, c->err, [&](auto& s) {
                return checked(rrl::server_conf_done(s, d));
            });
        case RRL_CONF_ZONE:
            return step(&c->u.zone, c->err, [&](auto& z) {
                return checked(rrl::zone_conf_done(z, d));
            });
        case RRL_CONF_LIMIT:
            return step(&c->u.limit, c->err, [&](auto& l) {
                return checked(rrl::limit_conf_done(l, d));
            });
        case RRL_CONF_VALUE:
            return RRL_OK;
        default:
            return step(&c->u.fail, c->err, [&](auto& f) {
                std::string e = rrl::fail_conf_done(f.fail, d);
                if (e.empty() && f.fail.local) {
                    e = rrl::local_zone_conf(f.zone, d, f.fail.zone_word,
                                             c->min_size,
                                             size_parser(c->parse_size));
                }
                return checked(e);
            });
    }
}

// an exception: logged by guarded(), the directive fails
int guarded_step(const char* what, rrl_conf_t* c,
                 int (*body)(rrl_conf_t*, std::string_view),
                 std::string_view w) noexcept {
    constexpr int thrown = -2;
    int rc = guarded(what, thrown, [&] { return body(c, w); });
    return rc == thrown ? error("internal error, see the log", c->err) : rc;
}

}  // namespace

extern "C" {

void rrl_conf_init(rrl_conf_t* conf, int kind, const char* directive) noexcept {
    std::memset(conf, 0, sizeof(*conf));
    conf->kind = kind;
    conf->directive = directive;
    switch (kind) {
        case RRL_CONF_SERVER:
            to_c(rrl::ServerConf{}, &conf->u.server);
            break;
        case RRL_CONF_ZONE:
            to_c(rrl::ZoneConf{}, &conf->u.zone);
            break;
        case RRL_CONF_LIMIT:
            to_c(rrl::LimitConf{}, &conf->u.limit);
            break;
        case RRL_CONF_VALUE:
            break;
        default:
            to_c(FailStep{}, &conf->u.fail);
    }
}

int rrl_conf_word(rrl_conf_t* conf, const char* w, size_t len) noexcept {
    return guarded_step("rrl_conf_word", conf, word, {w, len});
}

int rrl_limit_check(uint64_t cost, uint64_t capacity, uint64_t delay,
                    int algorithm, uint64_t burst, const char* zone,
                    size_t zone_len, const char* directive,
                    char* err) noexcept {
    return guarded("rrl_limit_check", RRL_ERROR, [&] {
        return error_or_ok(rrl::limit_check(cost, capacity, delay, algorithm,
                                            burst, {zone, zone_len}, directive),
                           err);
    });
}

void rrl_server_engine_conf(const rrl_server_conf_t* sc,
                            rrl_engine_conf_t* conf) noexcept {
    *conf = rrl_engine_conf_t{};
    conf->mode = sc->mode;
    conf->sentinel_name = sc->sentinel_name.data;
    conf->sentinel_name_len = sc->sentinel_name.len;
    conf->username = sc->username.data;
    conf->username_len = sc->username.len;
    conf->password = sc->password.data;
    conf->password_len = sc->password.len;
    conf->sentinel_password = sc->sentinel_password.data;
    conf->sentinel_password_len = sc->sentinel_password.len;
    conf->db = static_cast<uint64_t>(sc->db);
    conf->timeout_ms = sc->timeout_ms;
    conf->connect_timeout_ms = sc->connect_timeout_ms;
    conf->max_failures = sc->max_failures;
    conf->cooldown_ms = sc->cooldown_ms;
    conf->max_parked = sc->max_parked;
    conf->tls_server_name = sc->tls_server_name.data;
    conf->tls_server_name_len = sc->tls_server_name.len;
}

void rrl_zone_call_limit(const rrl_zone_conf_t* zone, const char* name,
                         size_t name_len, rrl_call_limit_t* limit) noexcept {
    *limit = rrl_call_limit_t{};
    limit->zone = name;
    limit->zone_len = name_len;
    limit->algorithm = zone->algorithm;
    limit->limit = zone->limit;
    limit->period_ms = zone->period_ms;
    limit->burst = zone->burst;
    limit->delay = RRL_DELAY_NONE;
    limit->overrides = zone->overrides != 0;
    limit->override = RRL_OVERRIDE_NONE;
    limit->lease = zone->lease;
}

int rrl_conf_done(rrl_conf_t* conf) noexcept {
    return guarded_step("rrl_conf_done", conf,
                        [](rrl_conf_t* c, std::string_view) { return done(c); },
                        {});
}

}  // extern "C"
