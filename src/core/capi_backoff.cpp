// The extern "C" face of the reconnect backoff (rrl_backoff.h).
#include "backoff.hpp"
#include "rrl_backoff.h"

uint64_t rrl_backoff_next(uint64_t* backoff_ms, uint64_t random) noexcept {
    return rrl::backoff_next(backoff_ms, random);
}
