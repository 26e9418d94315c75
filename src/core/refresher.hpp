// When a question about the topology is sent, and to which target, as a
// state machine over a plain struct (rrl_refresher_t, kept by the shim).
// It sends through the shim's send callback and sets the shim's one timer
// through its timer callback; time is passed in.
//
//   want      --one out--> again: wanted once it is answered
//             --the timer is set (a timeout or a delay)--> nothing
//             --the timer is the next poll--> that poll is canceled, then:
//             --sent less than min_ms ago--> the timer: the rest of min_ms
//             --else--> sent; the timer: timeout_ms
//   failed    --> the timer: min_ms (the first `quick` failures), retry_ms
//   answered  --> failures forgotten; again if wanted meanwhile, else the
//                 timer: the next poll
#pragma once

#include <cstddef>
#include <cstdint>

#include "rrl_refresher.h"

namespace rrl {

void refresher_init(rrl_refresher_t* r, const rrl_refresher_conf_t& conf);

void refresher_want(rrl_refresher_t* r, std::int64_t now_ms);

bool refresher_fired(rrl_refresher_t* r);

void refresher_failed(rrl_refresher_t* r);

bool refresher_answer(rrl_refresher_t* r, std::uint64_t generation);

bool refresher_answered(rrl_refresher_t* r);

std::size_t refresher_target(rrl_refresher_t* r, std::size_t n, bool take);

void refresher_stop(rrl_refresher_t* r);

}  // namespace rrl
