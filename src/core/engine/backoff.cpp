#include "engine/backoff.hpp"

#include <algorithm>

namespace rrl {

std::uint64_t backoff_next(std::uint64_t* backoff_ms, std::uint64_t random) {
    std::uint64_t b = *backoff_ms;
    b = b == 0 ? kBackoffMinMs : std::min<std::uint64_t>(b * 2, kBackoffMaxMs);
    *backoff_ms = b;
    return b * 3 / 4 + random % (b / 2 + 1);
}

}  // namespace rrl
