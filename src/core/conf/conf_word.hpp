// What the directive parsers share: a directive's words are "name=value"
// tokens and numbers read as nginx's ngx_atoi() reads them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace rrl {

// What one word of a directive gave.
struct ConfWord {
    bool host = false;  // the host's to finish: an address, a variable
    std::string error;  // empty: the word is good
};

// Decimal digits only, at least one, at most INT64_MAX (as ngx_atoi()).
std::optional<std::int64_t> parse_conf_number(std::string_view text);

// The value of "name=value" when word starts with prefix ("name=").
std::optional<std::string_view> conf_value(std::string_view word,
                                           std::string_view prefix);

// "\"" + text + "\"": every message quotes the words it names.
std::string quoted(std::string_view text);

// "invalid parameter \"WORD\" in \"DIRECTIVE\" directive"
std::string invalid_parameter(std::string_view word,
                              std::string_view directive);

// "duplicate parameter \"WORD\" in \"DIRECTIVE\" directive"
std::string duplicate_parameter(std::string_view word,
                                std::string_view directive);

// Each parameter once: names are a directive's parameters ("name=", or a
// flag's whole word: "nodelay"), seen a bit for each, in their order.
// word's parameter is marked in seen; when it was already, the message of
// duplicate_parameter(). "" for a word of no name: the grammar judges it.
std::string once(std::uint32_t& seen,
                 std::initializer_list<std::string_view> names,
                 std::string_view word, std::string_view directive);

}  // namespace rrl
