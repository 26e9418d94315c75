#include "algorithm.hpp"

namespace rrl {

namespace {

constexpr Algorithm algorithms[] = {
    {RRL_FIXED_WINDOW, "fixed_window", "fw"},
    {RRL_SLIDING_LOG, "sliding_log", "sl"},
};

static_assert(sizeof(algorithms) / sizeof(algorithms[0]) ==
              RRL_ALGORITHM_COUNT);

}  // namespace

const Algorithm* find_algorithm(std::string_view name) {
    for (const Algorithm& a : algorithms) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

const Algorithm* algorithm(int id) {
    if (id < 0 || id >= RRL_ALGORITHM_COUNT) return nullptr;
    return &algorithms[id];
}

}  // namespace rrl
