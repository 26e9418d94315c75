#include "decide/request.hpp"

#include <algorithm>
#include <new>
#include <string>

#include "script/algorithm.hpp"
#include "script/call_args.hpp"
#include "script/call_reply.hpp"
#include "script/cost.hpp"
#include "script/delay.hpp"
#include "script/key.hpp"
#include "script/script_reply.hpp"

namespace rrl {

namespace {

// the widest reply of one limit: its 4, then an override's or a lease's
constexpr std::size_t max_width =
    RRL_REPLY_PER_LIMIT + std::max(RRL_REPLY_OVERRIDE, RRL_REPLY_LEASE);

// what nginx's pool gives (NGX_ALIGNMENT), and what every part needs
constexpr std::size_t alignment = 8;
static_assert(alignof(Request) <= alignment &&
              alignof(rrl_call_limit_t) <= alignment &&
              alignof(rrl_limit_result_t) <= alignment);

constexpr std::size_t align(std::size_t n) {
    return (n + alignment - 1) & ~(alignment - 1);
}

// the block: the object, then its arrays, each aligned
struct Layout {
    std::size_t limits, zones, results, entries, renewals, values, bytes;

    explicit Layout(std::size_t capacity) {
        limits = align(sizeof(Request));
        zones = limits + align(capacity * sizeof(rrl_call_limit_t));
        results = zones + align(capacity * sizeof(const void*));
        entries = results + align(capacity * sizeof(rrl_limit_result_t));
        renewals = entries + align(capacity * sizeof(rrl_lease_entry_t*));
        values = renewals + align(capacity * sizeof(std::uint64_t));
        bytes = values + (RRL_REPLY_HEADER + capacity * max_width) *
                             sizeof(std::int64_t);
    }
};

template <typename T>
T* at(void* memory, std::size_t offset) {
    return reinterpret_cast<T*>(static_cast<char*>(memory) + offset);
}

}  // namespace

rrl_call_limit_t call_limit(const rrl_call_limit_t& zone, std::uint64_t cost,
                            const std::string_view* cost_text,
                            std::string_view key, std::uint64_t delay,
                            char* redis_key) {
    rrl_call_limit_t limit = zone;
    const Algorithm* a = algorithm(zone.algorithm);

    limit.zone_limit = zone.limit;
    limit.zone_period_ms = zone.period_ms;
    limit.zone_burst = zone.burst;
    limit.cost = cost_text ? request_cost(*cost_text) : cost;
    limit.key = reinterpret_cast<const unsigned char*>(key.data());
    limit.key_len = key.size();
    limit.delay = delay;
    limit.redis_key = redis_key;
    limit.redis_key_len =
        a ? write_key(redis_key, {zone.zone, zone.zone_len}, *a, key) : 0;
    return limit;
}

std::size_t Request::bytes(std::size_t capacity) {
    return Layout(capacity).bytes;
}

Request* Request::make(void* memory, std::size_t capacity) {
    Layout layout(capacity);
    auto* r = new (memory) Request();

    r->capacity_ = capacity;
    r->limits_ = at<rrl_call_limit_t>(memory, layout.limits);
    r->zones_ = at<const void*>(memory, layout.zones);
    r->results_ = at<rrl_limit_result_t>(memory, layout.results);
    r->lease_entries_ = at<rrl_lease_entry_t*>(memory, layout.entries);
    r->renewals_ = at<std::uint64_t>(memory, layout.renewals);
    r->reply_.values = at<std::int64_t>(memory, layout.values);
    r->reply_.capacity = RRL_REPLY_HEADER;
    // Redis's time reads 0 until a reply sets it
    r->reply_.values[0] = 0;
    r->reply_.values[1] = 0;
    return r;
}

bool Request::add(const void* id, const rrl_call_limit_t& zone,
                  std::uint64_t cost, const std::string_view* cost_text,
                  std::string_view key, std::uint64_t delay, char* redis_key) {
    if (size_ == capacity_) return false;

    // made in place: a limit is some 200 bytes, copied once from its zone
    auto* limit = new (&limits_[size_]) rrl_call_limit_t(
        call_limit(zone, cost, cost_text, key, delay, redis_key));
    zones_[size_] = id;
    results_[size_] = rrl_limit_result_t{};
    lease_entries_[size_] = nullptr;
    renewals_[size_] = 0;
    reply_.capacity += reply_width(limit->lease != 0, limit->overrides != 0);
    size_++;
    return true;
}

std::int64_t Request::redis_now_us() const {
    return reply_.values[1];
}

bool Request::has_lease() const {
    return std::any_of(limits_, limits_ + size_,
                       [](const rrl_call_limit_t& l) { return l.lease != 0; });
}

bool Request::decode() {
    return call_reply_decode(reply_.values, reply_.nvalues, limits_, size_,
                             results_, &decision_);
}

bool Request::decode_local() {
    return decode_reply_into(reply_.values, reply_.nvalues, size_, results_,
                             &decision_);
}

void Request::decide_at(std::int64_t now_us) {
    decision_ = decide_results(results_, size_, now_us);
}

std::int64_t Request::delay_us(std::uint64_t share) const {
    return request_delay_us(limits_, results_, size_, decision_.passed != 0,
                            share);
}

std::string Request::override_message() const {
    return invalid_override_message(limits_, size_);
}

}  // namespace rrl
