#include "conf/limit_conf.hpp"

#include "script/algorithm.hpp"
#include "script/cost.hpp"

namespace rrl {

ConfWord limit_conf_word(LimitConf& conf, std::string_view directive,
                         std::string_view word) {
    // delay= and nodelay are one parameter: their message is below
    std::string twice =
        once(conf.seen, {"zone=", "cost=", "settle="}, word, directive);
    if (!twice.empty()) return {false, twice};

    if (auto name = conf_value(word, "zone=")) {
        conf.zone_name = *name;
        return {};
    }

    auto delay = conf_value(word, "delay=");
    if (delay || word == "nodelay") {
        if (!conf.delay_word.empty()) {
            // delay= after delay= is a duplicate, after nodelay a conflict
            bool same = (conf.delay_word == "nodelay") == (word == "nodelay");
            return {false, same
                               ? duplicate_parameter(word, directive)
                               : "conflicting parameter " + quoted(word) +
                                     " in " + quoted(directive) + " directive"};
        }
        std::optional<std::int64_t> d =
            delay ? parse_conf_number(*delay) : std::nullopt;
        if (delay && !d) {
            return {false, "invalid value " + quoted(word) + " in " +
                               quoted(directive) +
                               " directive, delay must be a number"};
        }
        conf.delay = d ? static_cast<std::uint64_t>(*d) : RRL_DELAY_NONE;
        conf.delay_word = word;
        return {};
    }

    if (auto settle = conf_value(word, "settle=")) {
        if (settle->empty()) {
            return {false, invalid_parameter(word, directive)};
        }
        conf.settle = *settle;
        conf.host_word = RRL_CONF_HOST_SETTLE;
        return {true, ""};
    }

    auto value = conf_value(word, "cost=");
    if (!value) return {false, invalid_parameter(word, directive)};

    if (!value->empty() && (*value)[0] == '$') {
        conf.variable = *value;
        conf.host_word = RRL_CONF_HOST_COST;
        return {true, ""};
    }

    std::optional<std::int64_t> cost = parse_conf_number(*value);
    if (!cost || *cost == 0 || static_cast<std::uint64_t>(*cost) > max_cost) {
        return {false, "invalid cost " + quoted(word) + " in " +
                           quoted(directive) +
                           " directive, it must be a number from 1 to " +
                           std::to_string(max_cost) + " or a variable"};
    }

    conf.cost = static_cast<std::uint64_t>(*cost);
    conf.cost_arg = *value;
    return {};
}

std::string limit_conf_done(const LimitConf& conf, std::string_view directive) {
    if (conf.zone_name.empty()) {
        return quoted(directive) + " must have \"zone\" parameter";
    }
    return "";
}

std::string limit_delay_check(std::uint64_t delay, int algorithm,
                              std::uint64_t burst, std::string_view zone,
                              std::string_view directive) {
    if (delay == RRL_DELAY_NONE) return "";

    std::string word = quoted("delay=" + std::to_string(delay));

    if (algorithm != RRL_LEAKY_BUCKET) {
        const Algorithm* a = rrl::algorithm(algorithm);
        return word + " is only valid with algorithm=leaky_bucket (gcra), " +
               "zone " + quoted(zone) + " uses " +
               std::string(a ? a->name : "another") + ", in " +
               quoted(directive) + " directive";
    }

    if (delay > burst) {
        return word + " is more than the burst (" + std::to_string(burst) +
               ") of zone " + quoted(zone) + " in " + quoted(directive) +
               " directive";
    }

    return "";
}

std::string limit_check(std::uint64_t cost, std::uint64_t capacity,
                        std::uint64_t delay, int algorithm, std::uint64_t burst,
                        std::string_view zone, std::string_view directive) {
    if (cost > capacity) {
        return "cost=" + std::to_string(cost) + " is more than zone " +
               quoted(zone) + " can ever allow (" + std::to_string(capacity) +
               ") in " + quoted(directive) + " directive";
    }
    return limit_delay_check(delay, algorithm, burst, zone, directive);
}

std::string fail_conf_word(FailConf& conf, std::string_view directive,
                           std::string_view word) {
    std::string_view* param;

    if (conf_value(word, "local_zone=")) {
        param = &conf.zone_word;
    } else if (conf_value(word, "local_share=")) {
        param = &conf.share_word;
    } else {
        return invalid_parameter(word, directive);
    }

    if (!conf.local) {
        return invalid_parameter(word, directive) +
               ", it is only valid with \"local\"";
    }

    if (!param->empty()) return duplicate_parameter(word, directive);

    *param = word;
    return "";
}

std::string fail_conf_done(FailConf& conf, std::string_view directive) {
    conf.share = 1;

    if (conf.share_word.empty()) return "";

    std::string_view value = *conf_value(conf.share_word, "local_share=");
    std::optional<std::int64_t> share;

    if (value.size() > 2 && value.substr(0, 2) == "1/") {
        share = parse_conf_number(value.substr(2));
    }

    if (!share || *share == 0) {
        return "invalid value " + quoted(value) + " in " + quoted(directive) +
               " directive, local_share must be 1/N with N a positive number";
    }

    conf.share = static_cast<std::uint64_t>(*share);
    return "";
}

std::string status_conf(std::uint64_t& status, std::string_view directive,
                        std::string_view word) {
    std::optional<std::int64_t> code = parse_conf_number(word);
    if (!code || *code < 400 || *code > 599) {
        return "invalid value " + quoted(word) + " in " + quoted(directive) +
               " directive, it must be a status code from 400 to 599";
    }

    status = static_cast<std::uint64_t>(*code);
    return "";
}

}  // namespace rrl
