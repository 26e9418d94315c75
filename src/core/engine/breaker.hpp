// The circuit breaker of one Redis node, as a state machine: time is
// passed in (ms of the caller's clock).
//
//   closed --max_failures failures in a row--> open (until now + cooldown)
//   open --allow() at or after the end--> half open: that call is the probe
//   half open --the probe's success--> closed
//   half open --the probe's failure--> open again
//   half open --the probe abandoned (never sent)--> half open, no probe out:
//                                       the next call probes
//
// While a probe is out every other call is refused. Outcomes of calls made
// before the circuit opened may come late: a success closes it, a failure
// (re)opens it; either ends a probe that was out.
#pragma once

#include <cstdint>

namespace rrl {

enum class BreakerState { closed, open, half_open };

enum class BreakerVerdict { call, probe, refuse };

// What a transition changed, for the caller to log once.
enum class BreakerChange { none, opened, closed };

class Breaker {
   public:
    // max_failures 0 counts as 1
    explicit Breaker(std::uint64_t max_failures = 1,
                     std::int64_t cooldown_ms = 0);

    BreakerVerdict allow(std::int64_t now_ms);
    // Whether allow() reads its time now: only while open (a busy worker
    // reads no clock for a closed circuit).
    bool needs_clock() const { return state == BreakerState::open; }
    BreakerChange success();
    BreakerChange failure(std::int64_t now_ms);
    // A probe allow() granted was not sent (its request went away, nothing
    // to send it with): the next call probes. Nothing if no probe is out.
    void abandon();

    BreakerState state = BreakerState::closed;
    bool probing = false;        // half open: the probe is out
    std::uint64_t failures = 0;  // in a row
    std::int64_t open_until_ms = 0;
    std::uint64_t max_failures;
    std::int64_t cooldown_ms;
};

}  // namespace rrl
