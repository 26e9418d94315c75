#include "refresher.hpp"

namespace rrl {

namespace {

void set_timer(rrl_refresher_t* r, std::uint64_t ms) {
    if (ms == 0 && !r->timer_set) return;
    r->conf.timer(r->conf.data, ms);
    r->timer_set = ms != 0;
}

void send(rrl_refresher_t* r, std::int64_t now_ms) {
    set_timer(r, 0);
    r->sent = 1;
    r->last_ms = now_ms;
    r->asking = 1;
    if (r->conf.send(r->conf.data, ++r->generation) != RRL_OK) {
        r->asking = 0;
        refresher_failed(r);
        return;
    }
    set_timer(r, r->conf.timeout_ms);
}

}  // namespace

void refresher_init(rrl_refresher_t* r, const rrl_refresher_conf_t& conf) {
    *r = rrl_refresher_t{};
    r->conf = conf;
}

void refresher_want(rrl_refresher_t* r, std::int64_t now_ms) {
    if (r->stopped) return;
    if (r->asking) {
        r->again = 1;
        return;
    }
    if (r->timer_set) {
        if (!r->polling) return;  // asking is due already
        r->polling = 0;           // not the next poll: now
    }
    std::int64_t elapsed = now_ms - r->last_ms;
    if (r->sent && elapsed >= 0 &&
        static_cast<std::uint64_t>(elapsed) < r->conf.min_ms) {
        set_timer(r, r->conf.min_ms - static_cast<std::uint64_t>(elapsed));
        return;
    }
    send(r, now_ms);
}

bool refresher_fired(rrl_refresher_t* r) {
    r->timer_set = 0;
    r->polling = 0;
    if (!r->asking) return false;
    r->generation++;  // a late answer is ignored
    r->asking = 0;
    return true;
}

void refresher_failed(rrl_refresher_t* r) {
    if (r->conf.rotate) r->target++;
    if (r->stopped || r->timer_set) return;
    r->failures++;
    r->again = 0;
    set_timer(r,
              r->failures <= r->conf.quick ? r->conf.min_ms : r->conf.retry_ms);
}

bool refresher_answer(rrl_refresher_t* r, std::uint64_t generation) {
    if (!r->asking || generation != r->generation) return false;
    r->asking = 0;
    set_timer(r, 0);
    return true;
}

bool refresher_answered(rrl_refresher_t* r) {
    r->failures = 0;
    if (r->again) {
        // a failure came meanwhile: the answer may be older than it
        r->again = 0;
        return true;
    }
    if (r->conf.poll_ms == 0 || r->timer_set || r->stopped) return false;
    r->polling = 1;
    set_timer(r, r->conf.poll_ms);
    return false;
}

std::size_t refresher_target(rrl_refresher_t* r, std::size_t n, bool take) {
    if (n == 0) return 0;
    auto target = static_cast<std::size_t>(r->target % n);
    if (take) r->target++;
    return target;
}

void refresher_stop(rrl_refresher_t* r) {
    set_timer(r, 0);
    r->generation++;
    r->asking = 0;
    r->stopped = 1;
}

}  // namespace rrl
