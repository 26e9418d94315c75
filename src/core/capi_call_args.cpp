// The C API of call_args.hpp.
#include <cstring>

#include "call_args.hpp"
#include "capi.hpp"
#include "delay.hpp"
#include "log.hpp"
#include "reply.hpp"
#include "rrl_call_args.h"

using rrl::capi::guarded;

namespace {

bool to_limits(const rrl_call_limit_t* in, size_t n,
               std::vector<rrl::CallLimit>& out) {
    out.reserve(n);
    for (size_t i = 0; i < n; i++) {
        const rrl::Algorithm* a = rrl::algorithm(in[i].algorithm);
        if (a == nullptr) return false;
        out.push_back(
            {{in[i].zone, in[i].zone_len},
             a,
             in[i].limit,
             in[i].period_ms,
             in[i].burst,
             in[i].cost,
             {reinterpret_cast<const char*>(in[i].key), in[i].key_len}});
    }
    return true;
}

}  // namespace

size_t rrl_call_args_size(const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_call_args_size", size_t{0}, [&] {
        std::vector<rrl::CallLimit> l;
        return to_limits(limits, n, l) ? rrl::call_args_size(l.data(), n)
                                       : size_t{0};
    });
}

int rrl_call_args(char* buf, size_t size, const char* sha1, size_t sha1_len,
                  const rrl_call_limit_t* limits, size_t n, const char** argv,
                  size_t* argvlen) noexcept {
    return guarded("rrl_call_args", RRL_ERROR, [&] {
        std::vector<rrl::CallLimit> l;
        if (!to_limits(limits, n, l)) return RRL_ERROR;

        std::string out;
        out.reserve(size);
        auto args = rrl::call_args({sha1, sha1_len}, l.data(), n, out);
        if (out.size() > size) return RRL_ERROR;

        std::memcpy(buf, out.data(), out.size());
        for (size_t i = 0; i < args.size(); i++) {
            argv[i] = buf + (args[i].data() - out.data());
            argvlen[i] = args[i].size();
        }
        return RRL_OK;
    });
}

int rrl_call_reply_decode(const int64_t* values, size_t nvalues,
                          const rrl_call_limit_t* limits, size_t n,
                          rrl_limit_result_t* results,
                          rrl_decision_t* decision) noexcept {
    return guarded("rrl_call_reply_decode", RRL_ERROR, [&] {
        std::vector<rrl::CallLimit> l;
        if (!to_limits(limits, n, l) ||
            rrl_reply_decode(values, nvalues, n, results, decision) != RRL_OK) {
            return RRL_ERROR;
        }

        size_t i = rrl::over_capacity(l.data(), results, n);
        if (i == n) return RRL_OK;

        rrl::log(rrl::LogLevel::error,
                 "unexpected script reply: remaining " +
                     std::to_string(results[i].remaining) + " of zone \"" +
                     std::string(l[i].zone) + "\"");
        return RRL_ERROR;
    });
}

int64_t rrl_call_delay(const rrl_call_limit_t* limits,
                       const rrl_limit_result_t* results, size_t n, int passed,
                       uint64_t share) noexcept {
    return guarded("rrl_call_delay", int64_t{0}, [&] {
        return rrl::request_delay_us(limits, results, n, passed != 0, share);
    });
}
