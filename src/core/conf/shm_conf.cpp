#include "conf/shm_conf.hpp"

#include "conf/conf_word.hpp"

namespace rrl {

namespace {

std::string invalid_value(std::string_view value, std::string_view directive) {
    return "invalid value " + quoted(value) + " in " + quoted(directive) +
           " directive, ";
}

std::string kilobytes(std::uint64_t size) {
    return std::to_string(size / 1024) + "k";
}

}  // namespace

std::string deny_cache_conf(std::uint64_t& size, std::string_view directive,
                            std::string_view value, std::uint64_t min_size,
                            const SizeParser& parse_size) {
    if (value == "off") {
        size = 0;
        return "";
    }

    std::optional<std::uint64_t> parsed = parse_size(value);
    if (!parsed || *parsed < min_size) {
        return invalid_value(value, directive) +
               "it must be \"off\" or a size of at least " +
               kilobytes(min_size);
    }

    size = *parsed;
    return "";
}

std::string lease_zone_conf(std::uint64_t& size, std::string_view directive,
                            std::string_view value, std::uint64_t min_size,
                            const SizeParser& parse_size) {
    std::optional<std::uint64_t> parsed = parse_size(value);
    if (!parsed || *parsed < min_size) {
        return "invalid zone size " + quoted(value) + " in " +
               quoted(directive) + " directive, it must be at least " +
               kilobytes(min_size);
    }

    size = *parsed;
    return "";
}

std::string local_zone_conf(LocalZoneConf& zone, std::string_view directive,
                            std::string_view word, std::uint64_t min_size,
                            const SizeParser& parse_size) {
    zone = LocalZoneConf{};
    if (word.empty()) return "";

    std::string_view value = *conf_value(word, "local_zone=");
    size_t colon = value.find(':');
    std::optional<std::uint64_t> size;

    if (colon != std::string_view::npos && colon != 0) {
        zone.name = value.substr(0, colon);
        zone.size_word = value.substr(colon + 1);
        size = parse_size(zone.size_word);
    }

    if (!size) {
        return invalid_value(word, directive) +
               "it must be local_zone=NAME:SIZE";
    }

    if (*size < min_size) {
        return invalid_value(word, directive) + "local_zone must be at least " +
               kilobytes(min_size);
    }

    if (zone.name == metrics_zone_name || zone.name == deny_zone_name ||
        zone.name == lease_zone_name) {
        return invalid_value(word, directive) + "zone " + quoted(zone.name) +
               " is the module's own";
    }

    zone.size = *size;
    return "";
}

}  // namespace rrl
