// The refresher's extern "C" functions (rrl_refresher.h); none can throw
// (the callbacks are the shim's C functions).
#include "refresher.hpp"
#include "rrl_refresher.h"

void rrl_refresher_init(rrl_refresher_t* r,
                        const rrl_refresher_conf_t* conf) noexcept {
    rrl::refresher_init(r, *conf);
}

void rrl_refresher_want(rrl_refresher_t* r, int64_t now_ms) noexcept {
    rrl::refresher_want(r, now_ms);
}

int rrl_refresher_fired(rrl_refresher_t* r) noexcept {
    return rrl::refresher_fired(r) ? 1 : 0;
}

void rrl_refresher_failed(rrl_refresher_t* r) noexcept {
    rrl::refresher_failed(r);
}

int rrl_refresher_answer(rrl_refresher_t* r, uint64_t generation) noexcept {
    return rrl::refresher_answer(r, generation) ? 1 : 0;
}

int rrl_refresher_answered(rrl_refresher_t* r) noexcept {
    return rrl::refresher_answered(r) ? 1 : 0;
}

size_t rrl_refresher_target(rrl_refresher_t* r, size_t n, int take) noexcept {
    return rrl::refresher_target(r, n, take != 0);
}

void rrl_refresher_stop(rrl_refresher_t* r) noexcept {
    rrl::refresher_stop(r);
}
