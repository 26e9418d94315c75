// A request, as the core sees it: its limits (those whose key is not
// empty), built once from their zones', and what comes back for them: the
// integers of the script's reply (or the local zone's, in its shape), each
// limit's result and the request's decision. The engine's call, the deny
// cache, the leases, the local zone, the settlement and what the request
// shows all read and write this one object.
//
// It lives in one block of the caller's memory (bytes(capacity)), so that
// a request costs no allocation of its own, and it is trivially
// destructible: the block is freed with nginx's pool, and nothing in it
// owns anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/rrl_call_args_types.h"
#include "base/rrl_engine_types.h"
#include "base/rrl_lease_types.h"
#include "base/rrl_types.h"

namespace rrl {

// A request's limit: its zone's (zone, as configured), with the cost (the
// evaluated cost=$VAR's text as request_cost() reads it when cost_text is
// given, else cost), the key and delay given. Its Redis key (key.hpp) is
// written into redis_key (key_max_len(zone.zone_len) bytes): the key that
// the call, the deny cache, the lease table and the local zone use.
rrl_call_limit_t call_limit(const rrl_call_limit_t& zone, std::uint64_t cost,
                            const std::string_view* cost_text,
                            std::string_view key, std::uint64_t delay,
                            char* redis_key);

class Request {
   public:
    // The bytes of a request of up to capacity limits, and one made in
    // memory of that many bytes (8-byte aligned, as nginx's pool gives), with
    // no limit yet.
    static std::size_t bytes(std::size_t capacity);
    static Request* make(void* memory, std::size_t capacity);

    // Adds a limit (call_limit()'s) of the zone whose identity is id (a
    // batch sends each zone's arguments once); false when capacity is
    // reached.
    bool add(const void* id, const rrl_call_limit_t& zone, std::uint64_t cost,
             const std::string_view* cost_text, std::string_view key,
             std::uint64_t delay, char* redis_key);

    std::size_t size() const { return size_; }
    rrl_call_limit_t* limits() { return limits_; }
    const rrl_call_limit_t* limits() const { return limits_; }
    // each limit's zone, as add() was given it
    const void* const* zones() const { return zones_; }
    rrl_limit_result_t* results() { return results_; }
    const rrl_limit_result_t* results() const { return results_; }
    rrl_decision_t& decision() { return decision_; }
    const rrl_decision_t& decision() const { return decision_; }

    // Where a call's reply goes: values for the script's reply to a check
    // of these limits, its width known from them (reply_values()).
    rrl_engine_result_t& reply() { return reply_; }
    const rrl_engine_result_t& reply() const { return reply_; }

    // Redis's time in the reply (its second integer), us; 0 before one.
    std::int64_t redis_now_us() const;

    // A lease limit among them.
    bool has_lease() const;

    // The lease check's scratch, one per limit: the table's entry of a
    // lease limit (nullptr: none), then the units its renewal asks for.
    rrl_lease_entry_t** lease_entries() { return lease_entries_; }
    std::uint64_t* renewals() { return renewals_; }
    const std::uint64_t* renewals() const { return renewals_; }

    // Redis's reply to the call (reply()), decoded into the limits'
    // overrides and leases, their results and the decision: see
    // call_reply_decode(); false (logged) on a reply refused.
    bool decode();

    // The local zone's answer in the reply's shape (4 integers a limit),
    // decoded into the results and the decision: false (logged) when it
    // is not one.
    bool decode_local();

    // The decision on the results as they are at now_us (the deny cache's,
    // decided without Redis): decide_results().
    void decide_at(std::int64_t now_us);

    // The request's wait, in us: request_delay_us(), with its decision.
    std::int64_t delay_us(std::uint64_t share) const;

    // The log line of the first invalid override, once decoded; "": none.
    std::string override_message() const;

   private:
    Request() = default;

    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
    rrl_call_limit_t* limits_ = nullptr;
    const void** zones_ = nullptr;
    rrl_limit_result_t* results_ = nullptr;
    rrl_lease_entry_t** lease_entries_ = nullptr;
    std::uint64_t* renewals_ = nullptr;
    rrl_engine_result_t reply_{};
    rrl_decision_t decision_{};
};

}  // namespace rrl
