#include "topology_answer.hpp"

#include "key.hpp"

namespace rrl {

namespace {

// as many bytes as the shim's buffer held for an error's text
constexpr std::size_t kErrorText = 256;

}  // namespace

std::optional<std::string> answer_failure(const rrl_value_t* reply,
                                          bool array) {
    if (reply == nullptr) return "failed: no reply";
    if (reply->type == RRL_VALUE_ERROR) {
        return "failed: " +
               printable(std::string_view(reply->str, reply->len), kErrorText);
    }
    if (array && reply->type != RRL_VALUE_ARRAY) {
        return "failed: not an array";
    }
    return std::nullopt;
}

std::string answer_unknown(std::string_view name) {
    return "does not know \"" + std::string(name) + "\"";
}

}  // namespace rrl
