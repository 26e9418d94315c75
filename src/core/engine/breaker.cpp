#include "engine/breaker.hpp"

namespace rrl {

Breaker::Breaker(std::uint64_t max, std::int64_t cooldown)
    : max_failures(max > 0 ? max : 1), cooldown_ms(cooldown) {}

BreakerVerdict Breaker::allow(std::int64_t now_ms) {
    switch (state) {
        case BreakerState::open:
            if (now_ms < open_until_ms) return BreakerVerdict::refuse;
            state = BreakerState::half_open;
            probing = false;
            [[fallthrough]];
        case BreakerState::half_open:
            if (probing) return BreakerVerdict::refuse;
            probing = true;
            return BreakerVerdict::probe;
        default:
            return BreakerVerdict::call;
    }
}

BreakerChange Breaker::success() {
    failures = 0;
    probing = false;
    if (state == BreakerState::closed) return BreakerChange::none;
    state = BreakerState::closed;
    return BreakerChange::closed;
}

BreakerChange Breaker::failure(std::int64_t now_ms) {
    failures++;
    probing = false;
    if (state == BreakerState::closed && failures < max_failures) {
        return BreakerChange::none;
    }
    BreakerChange change = state == BreakerState::closed ? BreakerChange::opened
                                                         : BreakerChange::none;
    state = BreakerState::open;
    open_until_ms = now_ms + cooldown_ms;
    return change;
}

void Breaker::abandon() {
    if (state == BreakerState::half_open) probing = false;
}

}  // namespace rrl
