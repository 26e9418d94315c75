#include "script/cost.hpp"

namespace rrl {

std::uint64_t request_cost(std::string_view text) noexcept {
    std::uint64_t cost = 0;

    for (char c : text) {
        if (c < '0' || c > '9') return 1;
        // once over max_cost it stays over: no more digits are needed
        if (cost <= max_cost) cost = cost * 10 + static_cast<unsigned>(c - '0');
    }

    if (cost == 0) return 1;
    return cost > max_cost ? over_cost : cost;
}

}  // namespace rrl
