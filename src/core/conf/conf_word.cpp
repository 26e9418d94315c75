#include "conf/conf_word.hpp"

namespace rrl {

std::optional<std::int64_t> parse_conf_number(std::string_view text) {
    constexpr std::int64_t max = INT64_MAX;

    if (text.empty()) return std::nullopt;

    std::int64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        int digit = c - '0';
        if (value > (max - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

std::optional<std::string_view> conf_value(std::string_view word,
                                           std::string_view prefix) {
    if (word.substr(0, prefix.size()) != prefix) return std::nullopt;
    return word.substr(prefix.size());
}

std::string quoted(std::string_view text) {
    std::string s;
    s.reserve(text.size() + 2);
    s += '"';
    s += text;
    s += '"';
    return s;
}

std::string invalid_parameter(std::string_view word,
                              std::string_view directive) {
    return "invalid parameter " + quoted(word) + " in " + quoted(directive) +
           " directive";
}

std::string duplicate_parameter(std::string_view word,
                                std::string_view directive) {
    return "duplicate parameter " + quoted(word) + " in " + quoted(directive) +
           " directive";
}

std::string once(std::uint32_t& seen,
                 std::initializer_list<std::string_view> names,
                 std::string_view word, std::string_view directive) {
    std::uint32_t bit = 1;
    for (std::string_view name : names) {
        bool named = name.back() == '=' ? conf_value(word, name).has_value()
                                        : word == name;
        if (named) {
            if (seen & bit) return duplicate_parameter(word, directive);
            seen |= bit;
            return "";
        }
        bit <<= 1;
    }
    return "";
}

}  // namespace rrl
