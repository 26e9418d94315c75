// The circuit breaker of one Redis node, as a state machine over a plain
// struct (rrl_breaker_t, kept by the shim in the node): time is passed in.
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

#include "rrl.h"

namespace rrl {

enum class BreakerVerdict { call, probe, refuse };

// What a transition changed, for the caller to log once.
enum class BreakerChange { none, opened, closed };

void breaker_init(rrl_breaker_t* b, std::uint64_t max_failures,
                  std::int64_t cooldown_ms);

BreakerVerdict breaker_allow(rrl_breaker_t* b, std::int64_t now_ms);

BreakerChange breaker_success(rrl_breaker_t* b);

BreakerChange breaker_failure(rrl_breaker_t* b, std::int64_t now_ms);

// A probe allow() granted was not sent (its request went away, nothing to
// send it with): the next call probes. Nothing if no probe is out.
void breaker_abandon(rrl_breaker_t* b);

}  // namespace rrl
