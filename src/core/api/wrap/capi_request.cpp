// The C API of a request (rrl_request.h): guarded, forwarded to
// decide/request.hpp.
#include "api/wrap/capi_request.hpp"

#include <string_view>

#include "api/wrap/capi.hpp"
#include "script/cost.hpp"

static_assert(RRL_MAX_COST == rrl::max_cost && RRL_OVER_COST == rrl::over_cost);

using rrl::capi::guarded;

extern "C" {

size_t rrl_request_size(size_t capacity) noexcept {
    static_assert(sizeof(rrl_request_s) == sizeof(rrl::Request));
    return rrl::Request::bytes(capacity);
}

rrl_request_t* rrl_request_make(void* memory, size_t capacity) noexcept {
    // the handle is the Request, its only member
    return reinterpret_cast<rrl_request_t*>(
        rrl::Request::make(memory, capacity));
}

int rrl_request_add(rrl_request_t* request, const void* id,
                    const rrl_call_limit_t* zone, uint64_t cost,
                    const unsigned char* cost_text, size_t cost_len,
                    const unsigned char* key, size_t key_len, uint64_t delay,
                    char* redis_key) noexcept {
    return guarded("a request's limit", RRL_ERROR, [&] {
        std::string_view text(reinterpret_cast<const char*>(cost_text),
                              cost_len);
        return request->request.add(
                   id, *zone, cost, cost_text ? &text : nullptr,
                   {reinterpret_cast<const char*>(key), key_len}, delay,
                   redis_key)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

rrl_call_limit_t* rrl_request_limit(rrl_request_t* request, size_t i) noexcept {
    return &request->request.limits()[i];
}

rrl_limit_result_t* rrl_request_result(rrl_request_t* request,
                                       size_t i) noexcept {
    return &request->request.results()[i];
}

const rrl_decision_t* rrl_request_decision(
    const rrl_request_t* request) noexcept {
    return &request->request.decision();
}

rrl_engine_result_t* rrl_request_reply(rrl_request_t* request) noexcept {
    return &request->request.reply();
}

int64_t rrl_request_redis_now(const rrl_request_t* request) noexcept {
    return request->request.redis_now_us();
}

int rrl_request_has_lease(const rrl_request_t* request) noexcept {
    return request->request.has_lease();
}

void rrl_request_lease_entry(rrl_request_t* request, size_t i,
                             rrl_lease_entry_t* entry) noexcept {
    request->request.lease_entries()[i] = entry;
}

uint64_t rrl_request_renewal(const rrl_request_t* request, size_t i) noexcept {
    return request->request.renewals()[i];
}

void rrl_request_show(const rrl_request_t* request,
                      rrl_shown_t* shown) noexcept {
    const rrl::Request& q = request->request;
    shown->decision = &q.decision();
    shown->results = q.results();
    shown->limits = q.limits();
    shown->nlimits = q.size();
}

int rrl_request_decode(rrl_request_t* request) noexcept {
    return guarded("a request's reply", RRL_ERROR, [&] {
        return request->request.decode() ? RRL_OK : RRL_ERROR;
    });
}

int rrl_request_decode_local(rrl_request_t* request) noexcept {
    return guarded("a request's local answer", RRL_ERROR, [&] {
        return request->request.decode_local() ? RRL_OK : RRL_ERROR;
    });
}

void rrl_request_decide_at(rrl_request_t* request, int64_t now_us) noexcept {
    request->request.decide_at(now_us);
}

int64_t rrl_request_delay(const rrl_request_t* request,
                          uint64_t share) noexcept {
    return guarded("a request's delay", int64_t{0},
                   [&] { return request->request.delay_us(share); });
}

size_t rrl_request_override_message(const rrl_request_t* request, char* buf,
                                    size_t size) noexcept {
    return guarded("a request's override message", size_t{0}, [&] {
        return rrl::capi::put(request->request.override_message(), buf, size);
    });
}

}  // extern "C"
