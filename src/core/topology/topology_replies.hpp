// Where the primaries are: the replies to CLUSTER SLOTS (which node serves
// which slots) and to SENTINEL get-master-addr-by-name, given as the tree
// of rrl_value_t the engine builds from hiredis' reply. Both come from the
// network: every shape, number and host is checked before the engine
// connects anywhere.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "topology/address.hpp"
#include "base/rrl_types.h"

namespace rrl {

struct SlotRange {
    unsigned start;   // inclusive
    unsigned end;     // inclusive
    Address primary;  // host "": the node that was asked
};

// The primary of each range, in the reply's order; nullopt (and why in
// *error) when the reply is malformed or has more than max ranges.
std::optional<std::vector<SlotRange>> parse_cluster_slots(
    const rrl_value_t& reply, std::size_t max, std::string* error);

struct SentinelAnswer {
    bool known;       // false: the sentinel does not know that name
    Address primary;  // when known
};

std::optional<SentinelAnswer> parse_sentinel_primary(const rrl_value_t& reply,
                                                     std::string* error);

}  // namespace rrl
