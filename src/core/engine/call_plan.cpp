#include "engine/call_plan.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/resp.hpp"
#include "base/rrl_types.h"
#include "base/rrl_call_args_types.h"
#include "lease/settle.hpp"
#include "script/key.hpp"
#include "script/slot.hpp"

namespace rrl {

Call::Call(std::string_view sha, std::string_view form,
           const CallLimit* limits, const void* const* zones, std::size_t n,
           bool cluster) {
    if (n == 0) throw std::invalid_argument("a script call of no limit");
    if (sha.size() > sizeof(sha_)) {
        throw std::invalid_argument("a script call's SHA-1 too long");
    }
    std::memcpy(sha_, sha.data(), sha.size());
    sha_len_ = sha.size();
    time_ = form;
    settlement_ = form == kSettleForm;
    CostField cost = settlement_ ? settle_cost : nullptr;

    limits_.reserve(n);
    for (std::size_t j = 0; j < n; j++) {
        Limit l;
        const CallLimit& in = limits[j];
        if (!in.redis_key.empty()) {
            l.key.assign(in.redis_key.data(), in.redis_key.size());
        } else {
            SmallVector<char, 256> made(key_max_len(in.zone.size()));
            l.key.assign(made.data(), write_key(made.data(), in.zone,
                                                *in.algorithm, in.key));
        }
        l.zone_args = {algorithm_arg(in), in.limit, in.period_ms, in.burst};
        append_cost_arg(l.cost, in, cost);
        l.zone = zones[j];
        l.width = settlement_ ? RRL_REPLY_PER_LIMIT : reply_width(limits[j]);
        limits_.push_back(std::move(l));
    }

    for (std::size_t j = 0; j < n; j++) {
        unsigned slot = cluster ? key_slot(limits_[j].key_view()) : 0;
        auto p = std::find_if(parts_.begin(), parts_.end(),
                              [&](const Part& x) { return x.slot == slot; });
        if (p == parts_.end()) {
            parts_.push_back(Part{});
            p = &parts_.back();
            p->slot = slot;
        }
        p->index.push_back(j);
    }

    for (Part& p : parts_) {
        std::size_t n = RRL_REPLY_HEADER;
        for (std::size_t i : p.index) n += limits_[i].width;
        p.values.resize(n);
    }
}

std::size_t Call::offset(std::size_t i) const {
    std::size_t at = RRL_REPLY_HEADER;
    for (std::size_t k = 0; k < i; k++) at += limits_[k].width;
    return at;
}

const Call::Part& Call::at(std::size_t part) const {
    return parts_.at(part);
}

Call::Part& Call::at(std::size_t part) {
    return parts_.at(part);
}

const Call::Limit& Call::limit(std::size_t part, std::size_t j) const {
    return limits_[at(part).index.at(j)];
}

std::size_t Call::values(std::size_t part) const {
    return at(part).values.size();
}

std::string_view Call::key(std::size_t part, std::size_t j) const {
    return limit(part, j).key_view();
}

const void* Call::zone(std::size_t part, std::size_t j) const {
    return limit(part, j).zone;
}

const Call::ZoneArgs& Call::zone_args(std::size_t part, std::size_t j) const {
    return limit(part, j).zone_args;
}

std::string_view Call::cost(std::size_t part, std::size_t j) const {
    return limit(part, j).cost;
}

std::int64_t* Call::reply(std::size_t part) {
    Part& p = at(part);
    p.ok = true;
    return p.values.data();
}

std::size_t Call::merge(std::int64_t* out, std::size_t cap) const {
    std::size_t n = offset(limits_.size());

    if (cap < n) throw std::length_error("no room for the merged reply");

    for (const Part& p : parts_) {
        if (!p.ok) return 0;
    }

    if (parts_.size() == 1) {
        std::copy(parts_[0].values.begin(), parts_[0].values.end(), out);
        return n;
    }

    out[0] = 1;
    out[1] = parts_[0].values[1];

    for (const Part& p : parts_) {
        if (p.values[0] != 1) out[0] = 0;

        std::size_t at = RRL_REPLY_HEADER;
        for (std::size_t i : p.index) {
            std::size_t width = limits_[i].width;
            std::copy_n(&p.values[at], width, &out[offset(i)]);
            at += width;
        }
    }

    return n;
}

bool Call::to_release(std::size_t part) const {
    const Part& p = at(part);

    // a settlement reserves nothing: its parts settle their own keys
    if (settlement_ || !p.ok || p.values[0] != 1) return false;

    return std::any_of(parts_.begin(), parts_.end(),
                       [](const Part& x) { return !x.ok || x.values[0] != 1; });
}

std::string Call::release_command(std::size_t part) const {
    const Part& p = at(part);
    std::string n = std::to_string(p.index.size());
    std::string now = std::to_string(p.values.at(1));
    std::vector<std::string> numbers;  // the views below point into it
    numbers.reserve(3 * p.index.size());
    std::vector<std::string_view> argv{"EVALSHA", {sha_, sha_len_}, n};

    for (std::size_t i : p.index) argv.push_back(limits_[i].key_view());

    argv.push_back("release");
    argv.push_back(now);
    argv.push_back(time_);

    for (std::size_t i : p.index) {
        const Limit& l = limits_[i];
        argv.push_back(l.zone_args.algorithm);
        for (std::uint64_t v : {l.zone_args.limit, l.zone_args.period_ms,
                                l.zone_args.burst}) {
            argv.push_back(numbers.emplace_back(std::to_string(v)));
        }
        argv.push_back(l.cost);
    }

    return resp_command(argv);
}

bool Call::asks(std::size_t part) const {
    void* node = at(part).node;

    for (std::size_t j = 0; j < part; j++) {
        if (parts_[j].node == node) return false;
    }

    return true;
}

bool Call::out(std::size_t part) {
    at(part).in_batch = false;
    return awaited(part);
}

bool Call::awaited(std::size_t part) const {
    return !detached_ && !at(part).answered;
}

std::size_t Call::in_batches() const {
    return static_cast<std::size_t>(
        std::count_if(parts_.begin(), parts_.end(),
                      [](const Part& p) { return p.in_batch; }));
}

std::size_t Call::answer(std::size_t part) {
    at(part).answered = true;
    return pending();
}

std::size_t Call::pending() const {
    return static_cast<std::size_t>(
        std::count_if(parts_.begin(), parts_.end(),
                      [](const Part& p) { return !p.answered; }));
}

bool Call::unsent(std::size_t part) {
    return count(part) && at(part).probe;
}

bool Call::count(std::size_t part) {
    Part& p = at(part);

    if (p.counted) return false;

    p.counted = true;
    return true;
}

void Call::resent(std::size_t part, void* node) {
    Part& p = at(part);
    p.node = node;
    p.counted = false;
    p.probe = false;
}

std::size_t Call::time_out() {
    std::size_t first = parts_.size();

    for (std::size_t i = 0; i < parts_.size(); i++) {
        if (!parts_[i].answered && first == parts_.size()) first = i;
        parts_[i].answered = true;
    }

    return first;
}

bool Call::fails(std::size_t part) {
    return count(part) && asks(part);
}

bool Call::probe_out() const {
    return std::any_of(parts_.begin(), parts_.end(), [](const Part& p) {
        return p.in_batch && p.probe && !p.counted;
    });
}

bool Call::probe_lost(std::size_t part) {
    const Part& p = at(part);
    return p.in_batch && p.probe && count(part);
}

}  // namespace rrl
