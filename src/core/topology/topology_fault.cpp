#include "topology/topology_fault.hpp"

#include "script/key.hpp"
#include "base/log.hpp"

namespace rrl {

namespace {

// as many bytes as an error's text is logged with
constexpr std::size_t kErrorText = 256;

}  // namespace

std::optional<std::string> answer_failure(const Value* reply, bool array) {
    if (reply == nullptr) return "failed: no reply";
    if (reply->type == kValueError) {
        return "failed: " +
               printable(std::string_view(reply->str, reply->len), kErrorText);
    }
    if (array && reply->type != kValueArray) {
        return "failed: not an array";
    }
    return std::nullopt;
}

std::string answer_unknown(std::string_view name) {
    return "does not know \"" + std::string(name) + "\"";
}

std::optional<std::vector<SlotRange>> cluster_slots_answer(const Value* reply,
                                                           std::size_t max,
                                                           std::string* why) {
    why->clear();
    if (auto failure = answer_failure(reply, true)) {
        *why = *failure;
        return std::nullopt;
    }
    std::string error;
    auto parsed = parse_cluster_slots(*reply, max, &error);
    if (!parsed)
        log(LogLevel::error, "unexpected CLUSTER SLOTS reply: " + error);
    return parsed;
}

std::optional<Address> sentinel_answer(const Value* reply,
                                       std::string_view name,
                                       std::string* why) {
    why->clear();
    if (auto failure = answer_failure(reply, false)) {
        *why = *failure;
        return std::nullopt;
    }
    std::string error;
    auto answer = parse_sentinel_primary(*reply, &error);
    if (!answer) {
        log(LogLevel::error,
            "unexpected SENTINEL get-master-addr-by-name reply: " + error);
        return std::nullopt;
    }
    if (!answer->known) {
        *why = answer_unknown(name);
        return std::nullopt;
    }
    return answer->primary;
}

}  // namespace rrl
