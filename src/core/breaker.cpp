#include "breaker.hpp"

namespace rrl {

void breaker_init(rrl_breaker_t* b, std::uint64_t max_failures,
                  std::int64_t cooldown_ms) {
    *b = rrl_breaker_t{};
    b->state = RRL_BREAKER_CLOSED;
    b->max_failures = max_failures > 0 ? max_failures : 1;
    b->cooldown_ms = cooldown_ms;
}

BreakerVerdict breaker_allow(rrl_breaker_t* b, std::int64_t now_ms) {
    switch (b->state) {
        case RRL_BREAKER_OPEN:
            if (now_ms < b->open_until_ms) return BreakerVerdict::refuse;
            b->state = RRL_BREAKER_HALF_OPEN;
            b->probing = 0;
            [[fallthrough]];
        case RRL_BREAKER_HALF_OPEN:
            if (b->probing) return BreakerVerdict::refuse;
            b->probing = 1;
            return BreakerVerdict::probe;
        default:
            return BreakerVerdict::call;
    }
}

BreakerChange breaker_success(rrl_breaker_t* b) {
    b->failures = 0;
    b->probing = 0;
    if (b->state == RRL_BREAKER_CLOSED) return BreakerChange::none;
    b->state = RRL_BREAKER_CLOSED;
    return BreakerChange::closed;
}

BreakerChange breaker_failure(rrl_breaker_t* b, std::int64_t now_ms) {
    b->failures++;
    b->probing = 0;
    if (b->state == RRL_BREAKER_CLOSED && b->failures < b->max_failures) {
        return BreakerChange::none;
    }
    BreakerChange change = b->state == RRL_BREAKER_CLOSED
                               ? BreakerChange::opened
                               : BreakerChange::none;
    b->state = RRL_BREAKER_OPEN;
    b->open_until_ms = now_ms + b->cooldown_ms;
    return change;
}

void breaker_abandon(rrl_breaker_t* b) {
    if (b->state == RRL_BREAKER_HALF_OPEN) b->probing = 0;
}

}  // namespace rrl
