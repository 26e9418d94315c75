// Where the primaries are: the replies to CLUSTER SLOTS (which node serves
// which slots) and to SENTINEL get-master-addr-by-name, given as the tree
// of Value the engine builds from hiredis' reply. Both come from the
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

// A Redis reply as a tree, built by the engine from hiredis' reply
// (engine.cpp's convert()): its types are hiredis' REDIS_REPLY_* numbers.
constexpr int kValueString = 1;
constexpr int kValueArray = 2;
constexpr int kValueInteger = 3;
constexpr int kValueNil = 4;
constexpr int kValueStatus = 5;
constexpr int kValueError = 6;

struct Value {
    int type;
    long long integer;
    const char* str;  // string, status, error: not NUL-terminated
    std::size_t len;
    const Value* elements;  // array
    std::size_t nelements;
};

struct SlotRange {
    unsigned start;   // inclusive
    unsigned end;     // inclusive
    Address primary;  // host "": the node that was asked
};

// The primary of each range, in the reply's order; nullopt (and why in
// *error) when the reply is malformed or has more than max ranges.
std::optional<std::vector<SlotRange>> parse_cluster_slots(const Value& reply,
                                                          std::size_t max,
                                                          std::string* error);

struct SentinelAnswer {
    bool known;       // false: the sentinel does not know that name
    Address primary;  // when known
};

std::optional<SentinelAnswer> parse_sentinel_primary(const Value& reply,
                                                     std::string* error);

}  // namespace rrl
