// The C API of leases (rrl_lease_call.h): guarded, forwarded to
// lease/lease_call.hpp.
#include "api/rrl_lease_call.h"
#include "api/wrap/capi.hpp"
#include "api/wrap/capi_request.hpp"
#include "lease/lease_call.hpp"

using rrl::capi::guarded;

extern "C" {

int rrl_lease_call_check(rrl_request_t* request, int ask, int64_t now_us,
                         int64_t wall_us, int64_t renew_timeout_us) noexcept {
    return guarded("a lease check", RRL_LEASE_NONE, [&] {
        return rrl::lease_call_check(request->request, ask != 0, now_us,
                                     wall_us, renew_timeout_us);
    });
}

int rrl_lease_call_learn(const rrl_call_limit_t* limit,
                         const rrl_limit_result_t* result, int how,
                         rrl_lease_entry_t* entry, int64_t redis_now_us,
                         int64_t sent_us, int64_t now_us) noexcept {
    return guarded("a lease's answer", -1, [&] {
        return rrl::lease_call_learn(*limit, result, how, entry, redis_now_us,
                                     sent_us, now_us);
    });
}

int rrl_lease_renew(rrl_engine_t* engine, const char* sha, size_t sha_len,
                    const rrl_call_limit_t* limit, uint64_t want,
                    const void* zone, int64_t sent_us,
                    rrl_lease_learned_pt learned, void* arg) noexcept {
    return guarded("a lease renewal", RRL_ERROR, [&] {
        return rrl::LeaseRenewal::start(rrl::capi::engine_of(engine),
                                        {sha, sha_len}, *limit, want, zone,
                                        sent_us, learned, arg)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

}  // extern "C"
