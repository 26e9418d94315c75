#include "conf/server_conf.hpp"

#include <utility>

#include "conf/conf_word.hpp"

namespace rrl {

namespace {

struct NumberParam {
    std::string_view name;  // with its "="
    bool time;              // a time, or a number
    std::uint64_t ServerConf::*field;
    const char* what;  // for errors
};

const NumberParam number_params[] = {
    {"timeout=", true, &ServerConf::timeout_ms, "timeout"},
    {"connect_timeout=", true, &ServerConf::connect_timeout_ms, "timeout"},
    {"cooldown=", true, &ServerConf::cooldown_ms, "cooldown"},
    {"max_failures=", false, &ServerConf::max_failures, "number"},
    {"max_parked=", false, &ServerConf::max_parked, "number"},
};

std::string in_directive(std::string_view directive) {
    return " in " + quoted(directive) + " directive";
}

// a number parameter: a positive time or number
std::string number_param(ServerConf& conf, const NumberParam& param,
                         std::string_view directive, std::string_view word,
                         std::string_view value, const TimeParser& parse_time) {
    std::optional<std::uint64_t> n;

    if (param.time) {
        n = parse_time(value);
    } else if (auto i = parse_conf_number(value)) {
        n = static_cast<std::uint64_t>(*i);
    }

    if (!n || *n == 0) {
        return std::string("invalid ") + param.what + " " + quoted(word) +
               in_directive(directive);
    }

    conf.*param.field = *n;
    return "";
}

// "on" or "off" of name=
std::string on_off(std::optional<bool>& field, std::string_view directive,
                   std::string_view word, std::string_view value) {
    if (value != "on" && value != "off") {
        return "invalid value " + quoted(word) + in_directive(directive) +
               ", it must be \"on\" or \"off\"";
    }
    field = (value == "on");
    return "";
}

// a file or a name: not empty
std::string tls_word(std::string_view& field, std::string_view directive,
                     std::string_view word, std::string_view value) {
    if (value.empty()) return invalid_parameter(word, directive);
    field = value;
    return "";
}

std::string parameter(ServerConf& conf, std::string_view directive,
                      std::string_view word, const TimeParser& parse_time) {
    // "cluster" with "sentinel=" has a message of its own, below
    std::string twice = once(
        conf.seen,
        {"timeout=", "connect_timeout=", "cooldown=", "max_failures=",
         "max_parked=", "cluster", "sentinel=", "tls", "tls_ca=", "tls_cert=",
         "tls_key=", "tls_server_name=", "tls_verify=", "sentinel_tls=",
         "password=", "username=", "sentinel_password=", "db="},
        word, directive);
    if (!twice.empty()) return twice;

    for (const NumberParam& param : number_params) {
        if (auto value = conf_value(word, param.name)) {
            return number_param(conf, param, directive, word, *value,
                                parse_time);
        }
    }

    bool cluster = (word == "cluster");
    auto sentinel = conf_value(word, "sentinel=");

    if (cluster || sentinel) {
        if (conf.mode != ServerMode::single) {
            return invalid_parameter(word, directive) +
                   ", \"cluster\" and \"sentinel=\" exclude each other";
        }

        if (cluster) {
            conf.mode = ServerMode::cluster;
            return "";
        }

        if (sentinel->empty()) {
            return invalid_parameter(word, directive) +
                   ", sentinel= needs the name of the primary";
        }

        conf.sentinel_name = *sentinel;
        conf.mode = ServerMode::sentinel;
        return "";
    }

    if (word == "tls") {
        conf.tls = true;
    } else if (auto v = conf_value(word, "tls_ca=")) {
        return tls_word(conf.tls_ca, directive, word, *v);
    } else if (auto v = conf_value(word, "tls_cert=")) {
        return tls_word(conf.tls_cert, directive, word, *v);
    } else if (auto v = conf_value(word, "tls_key=")) {
        return tls_word(conf.tls_key, directive, word, *v);
    } else if (auto v = conf_value(word, "tls_server_name=")) {
        return tls_word(conf.tls_server_name, directive, word, *v);
    } else if (auto v = conf_value(word, "tls_verify=")) {
        return on_off(conf.tls_verify, directive, word, *v);
    } else if (auto v = conf_value(word, "sentinel_tls=")) {
        return on_off(conf.sentinel_tls, directive, word, *v);
    } else if (auto v = conf_value(word, "password=")) {
        conf.password = *v;
    } else if (auto v = conf_value(word, "username=")) {
        conf.username = *v;
    } else if (auto v = conf_value(word, "sentinel_password=")) {
        conf.sentinel_password = *v;
    } else if (auto v = conf_value(word, "db=")) {
        conf.db = parse_conf_number(*v);
        if (!conf.db) {
            return "invalid db " + quoted(word) + in_directive(directive);
        }
    } else {
        return invalid_parameter(word, directive);
    }

    return "";
}

std::string needs(std::string_view what, std::string_view other,
                  std::string_view directive) {
    return quoted(what) + " needs " + quoted(other) + " in " +
           quoted(directive) + " directive";
}

std::string tls_done(ServerConf& conf, std::string_view directive) {
    if (!conf.tls) {
        const std::pair<bool, const char*> given[] = {
            {!conf.tls_ca.empty(), "tls_ca="},
            {!conf.tls_cert.empty(), "tls_cert="},
            {!conf.tls_key.empty(), "tls_key="},
            {!conf.tls_server_name.empty(), "tls_server_name="},
            {conf.tls_verify.has_value(), "tls_verify="},
            {conf.sentinel_tls.has_value(), "sentinel_tls="}};
        for (const auto& [is, name] : given) {
            if (is) return needs(name, "tls", directive);
        }
    }
    if (conf.tls_cert.empty() != conf.tls_key.empty()) {
        return conf.tls_cert.empty()
                   ? needs("tls_key=", "tls_cert=", directive)
                   : needs("tls_cert=", "tls_key=", directive);
    }
    if (conf.sentinel_tls && conf.mode != ServerMode::sentinel) {
        return needs("sentinel_tls=", "sentinel=NAME", directive);
    }
    if (conf.tls && !tls_built()) {
        return quoted("tls") + " in " + quoted(directive) +
               " directive needs a module built with hiredis >= 1.0 with TLS "
               "(hiredis_ssl); this one was built without it";
    }
    if (!conf.tls_verify) conf.tls_verify = true;
    if (!conf.sentinel_tls) conf.sentinel_tls = conf.tls;
    return "";
}

}  // namespace

bool tls_built() {
#ifdef RRL_HAVE_TLS
    return true;
#else
    return false;
#endif
}

ConfWord server_conf_word(ServerConf& conf, std::string_view directive,
                          std::string_view word, const TimeParser& parse_time) {
    if (!conf.parameters) {
        // the addresses, then the parameters
        if (word.find('=') == std::string_view::npos && word != "cluster" &&
            word != "tls") {
            conf.addresses++;
            return {true, ""};
        }

        conf.parameters = true;

        if (conf.addresses == 0) {
            return {false, "no address" + in_directive(directive)};
        }
    }

    return {false, parameter(conf, directive, word, parse_time)};
}

std::string server_conf_done(ServerConf& conf, std::string_view directive) {
    if (conf.mode == ServerMode::single && conf.addresses > 1) {
        return "several addresses" + in_directive(directive) +
               " need \"cluster\" or \"sentinel=NAME\"";
    }

    // a cluster has only database 0
    if (conf.mode == ServerMode::cluster && conf.db) {
        return "\"db=\" cannot be used with \"cluster\" in " +
               quoted(directive) + " directive";
    }

    if (!conf.sentinel_password.empty() && conf.mode != ServerMode::sentinel) {
        return "\"sentinel_password=\" needs \"sentinel=NAME\" in " +
               quoted(directive) + " directive";
    }

    if (!conf.username.empty() && conf.password.empty()) {
        return "\"username=\" needs \"password=\" in " + quoted(directive) +
               " directive";
    }

    std::string tls = tls_done(conf, directive);
    if (!tls.empty()) return tls;

    if (!conf.db) conf.db = 0;
    return "";
}

}  // namespace rrl
