// The reconnect backoff of a Redis connection: kBackoffMinMs after the
// first failure, doubled after each next one up to kBackoffMaxMs, back to
// the start once a connection works (the caller resets it to 0). Each delay
// is the backoff +-25%, so a fleet's workers do not reconnect in step:
// randomness is passed in.
#pragma once

#include <cstdint>

namespace rrl {

constexpr std::uint64_t kBackoffMinMs = 50;
constexpr std::uint64_t kBackoffMaxMs = 500;

// Updates backoff_ms (0: none since the connection last worked) to the next
// backoff and returns the delay to wait, in ms.
std::uint64_t backoff_next(std::uint64_t* backoff_ms, std::uint64_t random);

}  // namespace rrl
