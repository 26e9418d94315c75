#include "server_conf.hpp"

#include "conf_word.hpp"

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

std::string parameter(ServerConf& conf, std::string_view directive,
                      std::string_view word, const TimeParser& parse_time) {
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

    if (auto v = conf_value(word, "password=")) {
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

}  // namespace

ConfWord server_conf_word(ServerConf& conf, std::string_view directive,
                          std::string_view word, const TimeParser& parse_time) {
    if (!conf.parameters) {
        // the addresses, then the parameters
        if (word.find('=') == std::string_view::npos && word != "cluster") {
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

    if (!conf.db) conf.db = 0;
    return "";
}

}  // namespace rrl
