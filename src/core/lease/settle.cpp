#include "lease/settle.hpp"

#include <limits>
#include <memory>
#include <stdexcept>

#include "base/guard.hpp"
#include "base/rrl_decision_types.h"
#include "script/call_reply.hpp"

namespace rrl {

namespace {

constexpr std::size_t number_max =
    std::numeric_limits<std::uint64_t>::digits10 + 1;

constexpr char kBadReply[] = "an unexpected reply";
constexpr char kFailed[] = "Redis failed it";

}  // namespace

std::optional<std::uint64_t> settle_value(std::string_view text) {
    if (text.empty()) return std::nullopt;

    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
        // leading zeros are digits too: checked at each one, no overflow
        if (value > RRL_SETTLE_MAX) return std::nullopt;
    }
    return value;
}

bool settle_value_over(std::string_view text) {
    if (text.empty()) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    return !settle_value(text);
}

std::string_view settle_why(std::string_view text) {
    if (settle_value(text)) return "";
    return settle_value_over(text) ? "over the maximum of 1000000000000"
                                   : "not a number";
}

int settle_plan(unsigned status, bool leased, std::int64_t redis_now_us,
                const rrl_call_limit_t& zone, const rrl_call_limit_t& charged,
                std::string_view text, rrl_call_limit_t& out) {
    // a rejection, a cached one, a failure or a local decision took none
    if ((status != RRL_STATUS_PASSED && status != RRL_STATUS_DELAYED &&
         status != RRL_STATUS_DELAYED_DRY_RUN) ||
        charged.key_len == 0) {
        return RRL_SETTLE_NONE;
    }

    auto actual = settle_value(text);
    if (!actual) return RRL_SETTLE_FAILED;
    // nothing to settle; nor for a key unlimited by its override when
    // charged: it took nothing (sent, the override in force later would
    // make it a refund or a debt of units never charged)
    if (*actual == charged.cost || charged.override == RRL_OVERRIDE_UNLIMITED) {
        return RRL_SETTLE_SETTLED;
    }

    out = zone;
    out.key = charged.key;
    out.key_len = charged.key_len;
    out.cost = charged.cost;
    out.settle_actual = *actual;
    out.settle_at_us = leased ? charged.settle_at_us : redis_now_us;
    // overrides=on: the limit the charge applied (the reply's: an
    // override's rate, else the zone's), settled with whatever is in force
    // later
    out.settle_limit = charged.overrides ? charged.limit : 0;
    out.settle_period_ms = charged.overrides ? charged.period_ms : 0;
    out.settle_burst = charged.overrides ? charged.burst : 0;
    return RRL_SETTLE_SEND;
}

std::string settle_cost(const CallLimit& limit) {
    if (limit.settle_at_us < 0) {
        throw std::invalid_argument("a settlement's time below 0");
    }
    std::string field = std::to_string(limit.cost) + ':' +
                        std::to_string(limit.settle_actual) + ':' +
                        std::to_string(limit.settle_at_us);
    if (limit.overrides && limit.settle_limit != 0 &&
        limit.settle_period_ms != 0) {
        field += ':' + std::to_string(limit.settle_limit) + ':' +
                 std::to_string(limit.settle_period_ms) + ':' +
                 std::to_string(limit.settle_burst);
    }
    return field;
}

std::size_t settle_args_size(const CallLimit* limits, std::size_t n) {
    // the form's word, and ":A:T" (":N:P:B" too) beyond a check's cost a
    // limit (a lease limit's "C:W:B:T" is longer than "E:A:T": counted
    // already)
    return call_args_size(limits, n) + kSettleForm.size() +
           5 * (number_max + 1) * n;
}

CallArgs settle_args(std::string_view sha1, const CallLimit* limits,
                     std::size_t n, std::string& out) {
    return form_args(sha1, kSettleForm, settle_cost, limits, n, out);
}

bool Settlement::start(engine::Engine* engine, std::string_view sha,
                       const rrl_call_limit_t* limits, const void* const* zones,
                       std::size_t n, std::int64_t sent_us,
                       rrl_settled_pt settled, void* arg) {
    bool told = false;
    bool made = guarded("a settlement", false, [&] {
        if (engine == nullptr || n == 0) return false;

        std::unique_ptr<Settlement> s(new Settlement);
        s->limits_.assign(limits, limits + n);
        s->keys_.reserve(n);
        for (rrl_call_limit_t& l : s->limits_) {
            s->keys_.emplace_back(reinterpret_cast<const char*>(l.key),
                                  l.key_len);
            l.key =
                reinterpret_cast<const unsigned char*>(s->keys_.back().data());
        }
        s->sent_ = sent_us;
        s->settled_ = settled;
        s->arg_ = arg;

        CallLimits l;
        if (!to_call_limits(s->limits_.data(), n, l)) return false;
        for (const CallLimit& x : l) {
            if (x.settle_at_us < 0) return false;
        }
        s->prepare(sha, kSettleForm, l.data(), zones, n,
                   RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * n);
        s->results_.resize(n);
        // the call holds its keys now: no pointer into the request's pool
        // outlives the request (settled() makes a key from the client's)
        for (rrl_call_limit_t& x : s->limits_) {
            x.redis_key = nullptr;
            x.redis_key_len = 0;
        }

        std::unique_ptr<BackgroundCall> call(std::move(s));
        Settlement& st = static_cast<Settlement&>(*call);
        if (send(call, *engine)) return true;
        told = true;
        st.not_made();
        return false;
    });

    if (!made && !told) {
        // bad input, or no memory: not made either
        settled(arg, limits, n, nullptr, nullptr, 0, sent_us, nullptr, 0);
    }
    return made;
}

void Settlement::not_made() {
    settled_(arg_, limits_.data(), limits_.size(), nullptr, nullptr, 0, sent_,
             nullptr, 0);
}

void Settlement::done() {
    std::size_t n = limits_.size();
    const rrl_engine_result_t& r = result_;
    rrl_decision_t decision{};
    const char* error = r.error;
    std::size_t error_len = r.error_len;

    if (r.rc == RRL_OK && r.nvalues > 0 && values_[0] == -1) {
        // a batch's entry Redis failed (a key of another type)
        error = kFailed;
        error_len = sizeof(kFailed) - 1;
    } else if (r.rc == RRL_OK) {
        if (guarded("a settlement's reply", false, [&] {
                return call_reply_decode(values_.data(), r.nvalues,
                                         limits_.data(), n, results_.data(),
                                         &decision);
            })) {
            settled_(arg_, limits_.data(), n, results_.data(), &decision,
                     values_[1], sent_, nullptr, 0);
            return;
        }
        error = kBadReply;
        error_len = sizeof(kBadReply) - 1;
    }
    if (error_len == 0) {
        error = kFailed;
        error_len = sizeof(kFailed) - 1;
    }
    settled_(arg_, limits_.data(), n, nullptr, nullptr, 0, sent_, error,
             error_len);
}

}  // namespace rrl
