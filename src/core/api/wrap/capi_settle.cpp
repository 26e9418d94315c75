// The C API of settlement (rrl_settle.h): guarded, forwarded to
// lease/settle.hpp and lease/lease_call.hpp.
#include "api/wrap/capi.hpp"
#include "lease/lease_call.hpp"
#include "lease/settle.hpp"
#include "api/rrl_settle.h"

using rrl::capi::guarded;

namespace {

std::string_view text_of(const unsigned char* text, size_t len) {
    return {reinterpret_cast<const char*>(text), text == nullptr ? 0 : len};
}

}  // namespace

extern "C" {

const char* rrl_settle_why(const unsigned char* text, size_t len) noexcept {
    // each of its texts is a literal: NUL-terminated
    return rrl::settle_why(text_of(text, len)).data();
}

int rrl_settle_plan(unsigned status, int leased, int64_t redis_now_us,
                    const rrl_call_limit_t* zone,
                    const rrl_call_limit_t* charged, const unsigned char* text,
                    size_t len, rrl_call_limit_t* out) noexcept {
    return rrl::settle_plan(status, leased != 0, redis_now_us, *zone, *charged,
                            text_of(text, len), *out);
}

int rrl_settle(rrl_engine_t* engine, const char* sha, size_t sha_len,
               const rrl_call_limit_t* limits, const void* const* zones,
               size_t n, int64_t sent_us, rrl_settled_pt settled,
               void* arg) noexcept {
    return guarded("a settlement", RRL_ERROR, [&] {
        return rrl::Settlement::start(
                   engine != nullptr ? &rrl::capi::engine_of(engine) : nullptr,
                   {sha, sha_len}, limits, zones, n, sent_us, settled, arg)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

int rrl_lease_settle(rrl_lease_entry_t* entry, rrl_call_limit_t* limit,
                     int64_t now_us) noexcept {
    return rrl::lease_call_settle(entry, *limit, now_us) ? 1 : 0;
}

}  // extern "C"
