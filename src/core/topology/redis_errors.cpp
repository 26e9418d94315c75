#include "topology/redis_errors.hpp"

#include <utility>

#include "base/rrl_types.h"

namespace rrl {

namespace {

struct ErrorKind {
    std::string_view word;
    int kind;
};

constexpr ErrorKind error_kinds[] = {
    {"NOSCRIPT", RRL_REPLY_NOSCRIPT},
    {"MOVED", RRL_REPLY_MOVED},
    {"ASK", RRL_REPLY_ASK},
    {"TRYAGAIN", RRL_REPLY_TRYAGAIN},
    {"CLUSTERDOWN", RRL_REPLY_CLUSTERDOWN},
    {"READONLY", RRL_REPLY_READONLY},
    {"MASTERDOWN", RRL_REPLY_MASTERDOWN},
    {"LOADING", RRL_REPLY_LOADING},
};

std::string_view first_word(std::string_view text) {
    return text.substr(0, text.find(' '));
}

}  // namespace

int error_kind(std::string_view error) {
    std::string_view word = first_word(error);
    for (const ErrorKind& k : error_kinds) {
        if (word == k.word) return k.kind;
    }
    return RRL_REPLY_ERROR;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
    int kind = error_kind(error);
    if (kind != RRL_REPLY_MOVED && kind != RRL_REPLY_ASK) return std::nullopt;

    std::string_view rest = error.substr(first_word(error).size());
    if (rest.empty() || rest[0] != ' ') return std::nullopt;
    rest.remove_prefix(1);

    std::size_t space = rest.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    std::optional<unsigned> slot = parse_small_decimal(rest.substr(0, space));
    if (!slot || *slot >= RRL_CLUSTER_SLOTS) return std::nullopt;

    std::optional<Address> target = parse_host_port(rest.substr(space + 1));
    if (!target) return std::nullopt;
    return Redirect{*slot, std::move(*target)};
}

}  // namespace rrl
