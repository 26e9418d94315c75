// The reconnect backoff of a Redis connection: 50 ms after the first
// failure, doubled after each next one up to 500 ms, back to the start once
// a connection works (the caller resets it to 0). Each delay is the backoff
// +-25%, so a fleet's workers do not reconnect in step: randomness is
// passed in.
#pragma once

#include <cstdint>

namespace rrl {

// Updates backoff_ms (0: none yet) and returns the delay to wait.
std::uint64_t backoff_next(std::uint64_t* backoff_ms, std::uint64_t random);

}  // namespace rrl
