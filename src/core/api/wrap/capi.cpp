// The extern "C" face of the core: argument checks, and no exception ever
// crosses into nginx.
#include "api/wrap/capi.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "script/algorithm.hpp"
#include "local/deny_entry.hpp"
#include "script/key.hpp"
#include "base/log.hpp"
#include "metrics/metrics.hpp"
#include "script/script_reply.hpp"
#include "api/rrl.h"

using rrl::LogLevel;
using rrl::capi::guarded;
using rrl::capi::put;

extern "C" {

size_t rrl_key_max_len(size_t zone_len) noexcept {
    return rrl::key_max_len(zone_len);
}

size_t rrl_key_build(char* buf, const char* zone, size_t zone_len,
                     int algorithm, const unsigned char* key,
                     size_t key_len) noexcept {
    return guarded("rrl_key_build", size_t{0}, [&] {
        const rrl::Algorithm* a = rrl::algorithm(algorithm);
        if (a == nullptr) return size_t{0};
        return rrl::write_key(buf, {zone, zone_len}, *a,
                              {reinterpret_cast<const char*>(key), key_len});
    });
}

int rrl_deny_learn(int64_t sent_us, int64_t now_us,
                   const rrl_deny_limit_t* limit,
                   const rrl_limit_result_t* result,
                   rrl_deny_entry_t* entry) noexcept {
    return rrl::deny_learn(sent_us, now_us, *limit, *result, entry) ? 1 : 0;
}

size_t rrl_metrics_format(const rrl_metrics_t* m, char* buf,
                          size_t size) noexcept {
    return guarded("rrl_metrics_format", size_t{0}, [&] {
        std::string out = rrl::metrics_format(*m);
        if (size > 0) {
            std::memcpy(buf, out.data(), std::min(size, out.size()));
        }
        return out.size();
    });
}

void rrl_set_logger(rrl_log_pt handler, void* data) noexcept {
    rrl::set_logger(handler, data);
}

}  // extern "C"
