// What a reply to a topology question (CLUSTER SLOTS, SENTINEL
// get-master-addr-by-name) says, or why it is of no use, as the engine
// logs it: no reply, an error reply (its text escaped: a hostile server
// forges no log line), or not the shape asked for. topology_replies.hpp parses the
// replies that may be answers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/address.hpp"
#include "base/rrl_types.h"
#include "topology/topology_replies.hpp"

namespace rrl {

// "failed: ..." for no reply (nullptr), an error reply, or (array) a reply
// that is not an array; nullopt when the reply may be an answer.
std::optional<std::string> answer_failure(const Value* reply, bool array);

// A sentinel that does not know the name of the primary asked for.
std::string answer_unknown(std::string_view name);

// CLUSTER SLOTS's reply (nullptr: none came), as parse_cluster_slots()
// reads it (at most max ranges). nullopt with the reason in *why, to be
// logged after "CLUSTER SLOTS on HOST ": "failed: no reply", "failed: "
// and an error reply's text (escaped), "failed: not an array"; "" when a
// malformed reply was logged here.
std::optional<std::vector<SlotRange>> cluster_slots_answer(const Value* reply,
                                                           std::size_t max,
                                                           std::string* why);

// A sentinel's reply for the primary of name (nullptr: none came), as
// parse_sentinel_primary() reads it. nullopt with the reason in *why, to be
// logged after "sentinel HOST ": "failed: ..." as above, "does not know
// \"NAME\"", or "" when a malformed reply was logged here.
std::optional<Address> sentinel_answer(const Value* reply,
                                       std::string_view name, std::string* why);

}  // namespace rrl
