// Settlement (settle=VALUE): after a request, its actual cost A against the
// estimate E charged up front. The value's rule, the plan of a request's
// limit, the script's settle form (a check's layout with ARGV[1] "settle"
// and each limit's cost field "E:A:T", T: Redis's time in us of the
// charge), and the settlement's call: one of its own on the worker's
// engine, in the background, in the turn's batches (background_call.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/rrl_settle_types.h"
#include "lease/background_call.hpp"
#include "script/call_args.hpp"

namespace rrl {

// The word of ARGV[1] that makes a call a settlement.
inline constexpr std::string_view kSettleForm = "settle";

// A of settle=VALUE: a whole number of decimal digits alone (no sign,
// blank or fraction), not empty, at most RRL_SETTLE_MAX.
std::optional<std::uint64_t> settle_value(std::string_view text);

// Digits alone, not empty, but over RRL_SETTLE_MAX.
bool settle_value_over(std::string_view text);

// Why text is no settle=VALUE (for the log): "over the maximum of
// 1000000000000" or "not a number"; "" when it is one (each a literal).
std::string_view settle_why(std::string_view text);

// The plan of a request's limit with settle=, its status RRL_STATUS_*:
// only the units Redis or a lease took (passed, delayed, the dry run's
// delay), of a limit with a key; RRL_SETTLE_SETTLED, nothing sent, when
// A == E or it was charged under an "unlimited" override (charged.override:
// none taken). out: the limit to settle with its zone's numbers (zone: a
// batch names a zone once, not with an override's), the key and E of
// charged, A of text (settle_value()), T the reply's redis_now_us, or a
// lease decision's (leased: charged's settle_at_us); with overrides=on,
// charged's limit, period and burst (as decoded: the limit applied) in
// settle_limit, _period_ms and _burst. Returns an RRL_SETTLE_* (FAILED:
// not a number).
int settle_plan(unsigned status, bool leased, std::int64_t redis_now_us,
                const rrl_call_limit_t& zone, const rrl_call_limit_t& charged,
                std::string_view text, rrl_call_limit_t& out);

// "E:A:T" of a limit, "E:A:T:N:P:B" with the limit the charge applied
// (overrides=on); T below 0 is none of Redis's times.
std::string settle_cost(const CallLimit& limit);

// The most bytes settle_args() writes for these limits.
std::size_t settle_args_size(const CallLimit* limits, std::size_t n);

// The settle form's arguments, appended to out (see call_args()); throws
// std::invalid_argument for a T below 0.
CallArgs settle_args(std::string_view sha1, const CallLimit* limits,
                     std::size_t n, std::string& out);

// A settlement in flight: its limits (keys copied).
class Settlement final : public BackgroundCall {
   public:
    // Settles n limits (each with cost E, settle_actual A and settle_at_us
    // T, at least 0; zones[i]: limit i's zone, for the plans) in one call
    // of the script (sha) on engine, in the turn's batches. settled(arg,
    // ...) runs once on every path: later, from the event loop (true), or
    // at once when the call is not made (false: no engine, no limit, bad
    // input, no memory, or the engine's refusal). No request is needed:
    // the client may have gone.
    static bool start(engine::Engine* engine, std::string_view sha,
                      const rrl_call_limit_t* limits, const void* const* zones,
                      std::size_t n, std::int64_t sent_us,
                      rrl_settled_pt settled, void* arg);

   private:
    // answered, failed or timed out: settled() once, with what came back
    void done() override;
    // not made: at once, with the copies
    void not_made();

    std::vector<rrl_call_limit_t> limits_;
    std::vector<std::string> keys_;
    std::vector<rrl_limit_result_t> results_;
    std::int64_t sent_ = 0;
    rrl_settled_pt settled_ = nullptr;
    void* arg_ = nullptr;
};

}  // namespace rrl
