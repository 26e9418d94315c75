// The algorithms a zone can use: their configuration names, the names the
// Lua script dispatches on, and the short tag in their Redis keys (so that
// changing a zone's algorithm never reads state of another shape).
#pragma once

#include <optional>
#include <string_view>

#include "rrl.h"

namespace rrl {

struct Algorithm {
    rrl_algorithm_e id;
    std::string_view name;     // in nginx.conf and in the script's ARGV
    std::string_view key_tag;  // suffix of its Redis keys
};

const Algorithm* find_algorithm(std::string_view name);
const Algorithm* algorithm(int id);

}  // namespace rrl
