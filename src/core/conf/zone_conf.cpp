#include "conf/zone_conf.hpp"

#include "script/algorithm.hpp"
#include "conf/conf_word.hpp"
#include "script/cost.hpp"
#include "script/key.hpp"
#include "script/rate.hpp"

namespace rrl {

namespace {

std::string in_directive(std::string_view directive) {
    return " in " + quoted(directive) + " directive";
}

}  // namespace

std::string zone_conf_word(ZoneConf& conf, std::string_view directive,
                           std::string_view word) {
    std::string twice =
        once(conf.seen,
             {"zone=", "rate=", "algorithm=", "burst=", "overrides=", "lease="},
             word, directive);
    if (!twice.empty()) return twice;

    if (auto name = conf_value(word, "zone=")) {
        conf.name = *name;
        if (!zone_name_valid(*name)) {
            return "invalid zone name " + quoted(*name) +
                   in_directive(directive);
        }
        return "";
    }

    if (auto text = conf_value(word, "rate=")) {
        conf.rate = *text;
        std::optional<Rate> rate = parse_rate(*text);
        if (!rate) {
            return "invalid rate " + quoted(word) + in_directive(directive);
        }
        conf.limit = rate->count;
        conf.period_ms = rate->period_ms;
        return "";
    }

    if (auto name = conf_value(word, "algorithm=")) {
        const Algorithm* a = find_algorithm(*name);
        if (a == nullptr) {
            return "invalid algorithm " + quoted(word) +
                   in_directive(directive);
        }
        conf.algorithm = a->id;
        return "";
    }

    if (auto value = conf_value(word, "burst=")) {
        std::optional<std::int64_t> burst = parse_conf_number(*value);
        if (!burst || static_cast<std::uint64_t>(*burst) > max_cost) {
            return "invalid burst value " + quoted(word) +
                   in_directive(directive);
        }
        conf.burst = static_cast<std::uint64_t>(*burst);
        return "";
    }

    if (auto value = conf_value(word, "overrides=")) {
        if (*value != "on" && *value != "off") {
            return "invalid value " + quoted(word) + in_directive(directive) +
                   ", it must be \"on\" or \"off\"";
        }
        conf.overrides = (*value == "on");
        return "";
    }

    if (auto value = conf_value(word, "lease=")) {
        if (*value == "off") {
            conf.lease = 0;
            return "";
        }
        // P%: a whole number as ngx_atoi() reads it, then '%'
        std::optional<std::int64_t> percent;
        if (value->size() > 1 && value->back() == '%') {
            percent = parse_conf_number(value->substr(0, value->size() - 1));
        }
        if (!percent || *percent < 1 || *percent > 100) {
            return "invalid lease value " + quoted(word) +
                   in_directive(directive) +
                   ", it must be \"off\" or a percentage from 1% to 100%";
        }
        conf.lease = static_cast<unsigned>(*percent);
        return "";
    }

    return invalid_parameter(word, directive);
}

std::string zone_conf_done(ZoneConf& conf, std::string_view directive) {
    if (conf.name.empty()) {
        return quoted(directive) + " must have \"zone\" parameter";
    }

    if (conf.limit == 0) {
        return quoted(directive) + " must have \"rate\" parameter";
    }

    const Algorithm& a = *algorithm(conf.algorithm);
    std::string with = " with \"algorithm=" + std::string(a.name) + "\"";

    if (conf.lease != 0) {
        std::string lease = quoted("lease=" + std::to_string(conf.lease) + "%");
        // a lease takes units ahead of the requests that use them: an
        // algorithm that keeps each request's time or spacing cannot
        std::string reason;
        if (conf.algorithm == RRL_SLIDING_LOG) {
            reason =
                "a sliding_log keeps each request's own time: a lease cannot "
                "take units ahead";
        } else if (conf.algorithm == RRL_LEAKY_BUCKET) {
            reason =
                "a leaky bucket spaces each request: a lease cannot take "
                "units ahead";
        }
        if (!reason.empty()) {
            return lease + " cannot be used" + with + " (" + reason + ")" +
                   in_directive(directive);
        }
        if (conf.overrides) {
            return lease + " and \"overrides=on\" together are not supported" +
                   in_directive(directive);
        }
    }

    conf.burst = effective_burst(a, conf.limit, conf.burst);
    conf.capacity = capacity(a, conf.limit, conf.burst);

    if (conf.capacity == 0) {
        return "\"burst=0\" leaves no room for any request" + with +
               in_directive(directive);
    }

    std::string rate_burst = "\"rate=" + std::string(conf.rate) +
                             "\" with \"burst=" + std::to_string(conf.burst) +
                             "\"";

    if (state_lifetime_ms(a, conf.limit, conf.period_ms, conf.burst) >
        RRL_MAX_STATE_MS) {
        return rate_burst + " keeps state for more than 100 years" +
               in_directive(directive);
    }

    if (conf.capacity > max_capacity(a)) {
        return rate_burst + " allows " + std::to_string(conf.capacity) +
               " requests a period, \"algorithm=" + std::string(a.name) +
               "\" at most " + std::to_string(max_capacity(a)) +
               in_directive(directive);
    }

    return "";
}

}  // namespace rrl
