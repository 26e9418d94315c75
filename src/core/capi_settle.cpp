// The C API of settlements (rrl_settle.h): no exception crosses into
// nginx. STUB until issue 17's core lands: every call fails.
#include "capi.hpp"
#include "rrl_settle.h"

extern "C" {

int rrl_settle_value(const unsigned char*, size_t, uint64_t*) noexcept {
    return RRL_ERROR;
}

size_t rrl_settle_args_size(const rrl_call_limit_t*, size_t) noexcept {
    return 0;
}

int rrl_settle_args(char*, size_t, const char*, size_t,
                    const rrl_call_limit_t*, size_t, const char**,
                    size_t*) noexcept {
    return RRL_ERROR;
}

int rrl_settle(rrl_engine_t*, const char*, size_t, const rrl_call_limit_t*,
               const void* const*, size_t, int64_t, rrl_settled_pt settled,
               void* arg) noexcept {
    if (settled != nullptr) {
        settled(arg, nullptr, 0, nullptr, nullptr, 0, 0, nullptr, 0);
    }
    return RRL_ERROR;
}

int rrl_lease_settle(rrl_lease_entry_t*, const rrl_call_limit_t*,
                     int64_t) noexcept {
    return 0;
}

}  // extern "C"
