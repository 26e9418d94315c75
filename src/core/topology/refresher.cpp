#include "topology/refresher.hpp"

namespace rrl {

void Refresher::set_timer(std::uint64_t ms) {
    if (ms == 0 && !timer_set) return;
    conf_.timer(conf_.data, ms);
    timer_set = ms != 0;
}

void Refresher::send(std::int64_t now_ms) {
    set_timer(0);
    sent = true;
    last_ms = now_ms;
    asking = true;
    if (!conf_.send(conf_.data, ++generation)) {
        asking = false;
        failed();
        return;
    }
    set_timer(conf_.timeout_ms);
}

void Refresher::want(std::int64_t now_ms) {
    if (stopped) return;
    if (asking) {
        again = true;
        return;
    }
    if (timer_set) {
        if (!polling) return;  // asking is due already
        polling = false;       // not the next poll: now
    }
    std::int64_t elapsed = now_ms - last_ms;
    if (sent && elapsed >= 0 &&
        static_cast<std::uint64_t>(elapsed) < conf_.min_ms) {
        set_timer(conf_.min_ms - static_cast<std::uint64_t>(elapsed));
        return;
    }
    send(now_ms);
}

bool Refresher::fired() {
    timer_set = false;
    polling = false;
    if (!asking) return false;
    generation++;  // a late answer is ignored
    asking = false;
    return true;
}

void Refresher::failed() {
    if (conf_.rotate) next_target++;
    if (stopped || timer_set) return;
    failures++;
    again = false;
    set_timer(failures <= conf_.quick ? conf_.min_ms : conf_.retry_ms);
}

bool Refresher::answer(std::uint64_t g) {
    if (!asking || g != generation) return false;
    asking = false;
    set_timer(0);
    return true;
}

bool Refresher::answered() {
    failures = 0;
    if (again) {
        // a failure came meanwhile: the answer may be older than it
        again = false;
        return true;
    }
    if (conf_.poll_ms == 0 || timer_set || stopped) return false;
    polling = true;
    set_timer(conf_.poll_ms);
    return false;
}

std::size_t Refresher::target(std::size_t n, bool take) {
    if (n == 0) return 0;
    auto t = static_cast<std::size_t>(next_target % n);
    if (take) next_target++;
    return t;
}

void Refresher::stop() {
    set_timer(0);
    generation++;
    asking = false;
    stopped = true;
}

}  // namespace rrl
