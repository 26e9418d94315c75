// The C API of settlements (rrl_settle.h): no exception crosses into
// nginx. A settlement is a call of its own on the worker's engine, in the
// background, as a lease's renewal is (capi_lease_call.cpp).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/wrap/capi.hpp"
#include "api/wrap/capi_engine.hpp"
#include "lease/lease.hpp"
#include "api/rrl_settle.h"
#include "lease/settle.hpp"

using rrl::capi::guarded;

namespace {

// A settlement in flight: its limits (keys copied), arguments and reply.
struct Settlement {
    std::vector<rrl_call_limit_t> limits;
    std::vector<std::string> keys;
    std::vector<const void*> zones;
    std::vector<std::int64_t> values;
    std::vector<rrl_limit_result_t> results;
    rrl_engine_result_t result;
    std::int64_t sent;
    rrl_settled_pt settled;
    void* arg;
};

constexpr char kBadReply[] = "an unexpected reply";
constexpr char kFailed[] = "Redis failed it";

// answered, failed or timed out: settled() once, with what came back
// (nothing here allocates: nothing can keep it from running)
void done(void*, void* data) noexcept {
    std::unique_ptr<Settlement> s(static_cast<Settlement*>(data));
    std::size_t n = s->limits.size();
    const rrl_engine_result_t& r = s->result;
    rrl_decision_t decision{};
    const char* error = r.error;
    std::size_t error_len = r.error_len;

    if (r.rc == RRL_OK && r.nvalues > 0 && s->values[0] == -1) {
        // a batch's entry Redis failed (a key of another type)
        error = kFailed;
        error_len = sizeof(kFailed) - 1;
    } else if (r.rc == RRL_OK) {
        if (rrl_call_reply_decode(s->values.data(), r.nvalues, s->limits.data(),
                                  n, s->results.data(), &decision) == RRL_OK) {
            s->settled(s->arg, s->limits.data(), n, s->results.data(),
                       &decision, s->values[1], s->sent, nullptr, 0);
            return;
        }
        error = kBadReply;
        error_len = sizeof(kBadReply) - 1;
    }
    if (error_len == 0) {
        error = kFailed;
        error_len = sizeof(kFailed) - 1;
    }
    s->settled(s->arg, s->limits.data(), n, nullptr, nullptr, 0, s->sent, error,
               error_len);
}

}  // namespace

extern "C" {

int rrl_settle_value(const unsigned char* text, size_t len,
                     uint64_t* actual) noexcept {
    std::string_view t{reinterpret_cast<const char*>(text),
                       text == nullptr ? 0 : len};
    auto value = rrl::settle_value(t);
    if (!value) return rrl::settle_value_over(t) ? RRL_SETTLE_OVER : RRL_ERROR;
    *actual = *value;
    return RRL_OK;
}

const char* rrl_settle_why(const unsigned char* text, size_t len) noexcept {
    uint64_t actual = 0;
    switch (rrl_settle_value(text, len, &actual)) {
        case RRL_OK:
            return "";
        case RRL_SETTLE_OVER:
            return "over the maximum of 1000000000000";
        default:
            return "not a number";
    }
}

int rrl_settle_plan(unsigned status, int leased, int64_t redis_now_us,
                    const rrl_call_limit_t* zone,
                    const rrl_call_limit_t* charged, const unsigned char* text,
                    size_t len, rrl_call_limit_t* out) noexcept {
    return rrl::settle_plan(
        status, leased != 0, redis_now_us, *zone, *charged,
        {reinterpret_cast<const char*>(text), text == nullptr ? 0 : len}, *out);
}

size_t rrl_settle_args_size(const rrl_call_limit_t* limits, size_t n) noexcept {
    return guarded("rrl_settle_args_size", size_t{0}, [&] {
        rrl::CallLimits l;
        return rrl::to_call_limits(limits, n, l)
                   ? rrl::settle_args_size(l.data(), n)
                   : size_t{0};
    });
}

int rrl_settle_args(char* buf, size_t size, const char* sha1, size_t sha1_len,
                    const rrl_call_limit_t* limits, size_t n, const char** argv,
                    size_t* argvlen) noexcept {
    return guarded("rrl_settle_args", RRL_ERROR, [&] {
        rrl::CallLimits l;
        if (!rrl::to_call_limits(limits, n, l)) return RRL_ERROR;
        for (const rrl::CallLimit& x : l) {
            if (x.settle_at_us < 0) return RRL_ERROR;
        }

        std::string out;
        out.reserve(size);
        auto args = rrl::settle_args({sha1, sha1_len}, l.data(), n, out);
        return rrl::capi::put_args(out, args, buf, size, argv, argvlen);
    });
}

int rrl_settle(rrl_engine_t* engine, const char* sha, size_t sha_len,
               const rrl_call_limit_t* limits, const void* const* zones,
               size_t n, int64_t sent_us, rrl_settled_pt settled,
               void* arg) noexcept {
    bool told = false;
    Settlement* made = guarded("a settlement", (Settlement*)nullptr, [&] {
        if (engine == nullptr || n == 0) return (Settlement*)nullptr;

        auto s = std::make_unique<Settlement>();
        s->limits.assign(limits, limits + n);
        s->keys.reserve(n);
        for (rrl_call_limit_t& l : s->limits) {
            s->keys.emplace_back(reinterpret_cast<const char*>(l.key),
                                 l.key_len);
            l.key =
                reinterpret_cast<const unsigned char*>(s->keys.back().data());
        }
        s->zones.assign(zones, zones + n);
        s->sent = sent_us;
        s->settled = settled;
        s->arg = arg;

        rrl::CallLimits l;
        if (!rrl::to_call_limits(s->limits.data(), n, l)) {
            return (Settlement*)nullptr;
        }
        for (const rrl::CallLimit& x : l) {
            if (x.settle_at_us < 0) return (Settlement*)nullptr;
        }

        s->values.resize(RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n);
        s->results.resize(n);
        s->result = {};
        s->result.values = s->values.data();
        s->result.capacity = s->values.size();

        if (rrl::capi::engine_of(engine).call(
                {sha, sha_len}, rrl::kSettleForm, rrl::settle_cost, l.data(),
                s->zones.data(), n, &s->result, done, s.get(),
                s.get()) == nullptr) {
            // not made: at once, with the copies
            told = true;
            settled(arg, s->limits.data(), n, nullptr, nullptr, 0, sent_us,
                    nullptr, 0);
            return (Settlement*)nullptr;
        }
        return s.release();
    });

    if (made != nullptr) return RRL_OK;
    if (!told) {
        // bad input, or no memory: not made either
        settled(arg, limits, n, nullptr, nullptr, 0, sent_us, nullptr, 0);
    }
    return RRL_ERROR;
}

int rrl_lease_settle(rrl_lease_entry_t* entry, rrl_call_limit_t* limit,
                     int64_t now_us) noexcept {
    rrl_lease_limit_t l = {limit->algorithm, limit->limit, limit->period_ms,
                           limit->burst,     limit->lease, limit->cost};
    return rrl::lease_settle(l, entry, limit->cost, limit->settle_actual,
                             limit->settle_at_us, now_us)
               ? 1
               : 0;
}

}  // extern "C"
