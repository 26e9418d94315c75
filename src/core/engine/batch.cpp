#include "engine/batch.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/rrl_call_args_types.h"
#include "base/small_vector.hpp"
#include "engine/resp.hpp"

namespace rrl {

bool Batch::add(Call& plan, std::size_t part, void* data) {
    if (!command_.empty()) throw std::logic_error("a batch already built");

    entries_.push_back(
        Entry{&plan, part, plan.limits(part), plan.values(part), data});
    plan.enter(part);
    keys_ += plan.limits(part);
    values_ += plan.values(part);

    return entries_.size() >= kMaxParts || keys_ >= kMaxKeys;
}

void Batch::remove(std::size_t i) {
    if (!command_.empty()) throw std::logic_error("a batch already built");

    const Entry& e = entries_.at(i);
    keys_ -= e.limits;
    values_ -= e.values;
    for (std::size_t k = i; k + 1 < entries_.size(); k++) {
        entries_[k] = entries_[k + 1];
    }
    entries_.pop_back();
}

std::size_t Batch::share(std::size_t i) const {
    std::size_t offset = 0;

    for (std::size_t k = 0; k < i; k++) offset += entries_.at(k).values;

    return offset;
}

bool Batch::count() {
    bool seen = false;

    for (const Entry& e : entries_) {
        if (e.plan->count(e.part)) seen = true;
    }

    return seen;
}

void Batch::resent(void* node) {
    node_ = node;
    for (const Entry& e : entries_) e.plan->resent(e.part, node);
}

RetryAction Batch::retry(int kind) {
    RetryAction action = retry_action(kind, reloaded_, redirected_);

    if (action == RetryAction::load_script) reloaded_ = true;
    if (action == RetryAction::redirect) redirected_ = true;

    return action;
}

const std::string& Batch::command(std::string_view sha) {
    if (!command_.empty()) return command_;

    // the batch's zones, each named once: a few, in practice; the command
    // written once, into room for its usual size
    SmallVector<std::pair<const Call*, std::pair<std::size_t, std::size_t>>,
                8>
        zones;
    SmallVector<const void*, 8> ids;
    SmallVector<std::size_t, 64> zone_of;
    command_.reserve(256 + 128 * keys_);

    for (const Entry& e : entries_) {
        for (std::size_t j = 0; j < e.limits; j++) {
            const void* id = e.plan->zone(e.part, j);
            auto z = std::find(ids.begin(), ids.end(), id);
            std::size_t at = static_cast<std::size_t>(z - ids.begin());
            if (z == ids.end()) {
                ids.push_back(id);
                zones.push_back({e.plan, {e.part, j}});
            }
            zone_of.push_back(at + 1);
        }
    }

    // requests in a row of one shape (count, zones, costs) go as a run,
    // "*<r>" and the shape once: Redis makes an object of each argument,
    // and Lua a string. Not settlements, nor limits of a lease zone (a
    // lease's cost fields are each its own, and each is written out).
    auto runnable = [](const Entry& e) {
        constexpr std::string_view lease = RRL_LEASE_SUFFIX;
        if (e.plan->settlement()) return false;
        for (std::size_t j = 0; j < e.limits; j++) {
            std::string_view a = e.plan->zone_args(e.part, j).algorithm;
            if (a.size() >= lease.size() &&
                a.substr(a.size() - lease.size()) == lease) {
                return false;
            }
        }
        return true;
    };
    SmallVector<std::size_t, 16> run;  // a run's first entry: its length;
                                       // the others: 0
    std::size_t nargs = 0;
    bool open = false;  // the last run takes more

    for (std::size_t i = 0, first = 0, first_at = 0, at = 0;
         i < entries_.size(); i++) {
        const Entry& e = entries_[i];
        const Entry& f = entries_[first];
        bool same = open && e.limits == f.limits;
        for (std::size_t j = 0; same && j < e.limits; j++) {
            same = zone_of[at + j] == zone_of[first_at + j] &&
                   e.plan->cost(e.part, j) == f.plan->cost(f.part, j);
        }
        if (same) {
            if (++run[first] == 2) nargs++;  // its "*<r>"
            run.push_back(0);
        } else {
            first = i;
            first_at = at;
            open = runnable(e);
            run.push_back(1);
            nargs += 1 + 2 * e.limits;
        }
        at += e.limits;
    }

    resp_array(command_, 3 + keys_ + 3 + 4 * ids.size() + nargs);
    resp_bulk(command_, std::string_view("EVALSHA"));
    resp_bulk(command_, sha);
    resp_bulk(command_, keys_);

    for (const Entry& e : entries_) {
        for (std::size_t j = 0; j < e.limits; j++) {
            resp_bulk(command_, e.plan->key(e.part, j));
        }
    }

    // "batch", "" (no injected time: Redis's TIME), the zones
    resp_bulk(command_, std::string_view("batch"));
    resp_bulk(command_, std::string_view(""));
    resp_bulk(command_, ids.size());

    for (const auto& [plan, at] : zones) {
        const Call::ZoneArgs& z = plan->zone_args(at.first, at.second);
        resp_bulk(command_, z.algorithm);
        resp_bulk(command_, std::size_t{z.limit});
        resp_bulk(command_, std::size_t{z.period_ms});
        resp_bulk(command_, std::size_t{z.burst});
    }

    // each request or run: "*<r>" (a run), its count ("s<n>": a
    // settlement), then each limit's zone and cost
    std::size_t next = 0;

    for (std::size_t i = 0; i < entries_.size(); i++) {
        const Entry& e = entries_[i];
        if (run[i] == 0) {
            next += e.limits;  // in a run: its shape is written
            continue;
        }
        if (run[i] > 1) resp_bulk(command_, "*" + std::to_string(run[i]));
        if (e.plan->settlement()) {
            resp_bulk(command_, "s" + std::to_string(e.limits));
        } else {
            resp_bulk(command_, e.limits);
        }
        for (std::size_t j = 0; j < e.limits; j++) {
            resp_bulk(command_, zone_of[next++]);
            resp_bulk(command_, e.plan->cost(e.part, j));
        }
    }

    return command_;
}

}  // namespace rrl
