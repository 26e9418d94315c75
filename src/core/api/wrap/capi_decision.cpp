// The C API of decision.hpp.
#include "script/call_args.hpp"
#include "api/wrap/capi.hpp"
#include "decide/decision.hpp"
#include "api/rrl_decision.h"

using rrl::capi::guarded;

static_assert(RRL_STATUS_FAILED_LOCAL ==
              static_cast<unsigned>(rrl::Status::failed_local));
static_assert(RRL_STATUS_DELAYED_DRY_RUN ==
              static_cast<unsigned>(rrl::Status::delayed_dry_run));
static_assert(RRL_FAIL_LOCAL == static_cast<unsigned>(rrl::FailMode::local));
static_assert(RRL_SHOW_LEGACY == rrl::show::legacy &&
              RRL_SHOW_DRAFT == rrl::show::draft &&
              RRL_SHOW_RETRY_AFTER == rrl::show::retry_after &&
              RRL_SHOW_LOCAL_LIMITS == rrl::show::local_limits);

namespace {

bool outcome_of(int outcome, rrl::Outcome* out) {
    if (outcome < RRL_OUTCOME_NO_KEY || outcome > RRL_OUTCOME_LOCAL_FAILED) {
        return false;
    }
    *out = static_cast<rrl::Outcome>(outcome);
    return true;
}

}  // namespace

int rrl_decide(const rrl_settings_t* s, int outcome, int passed,
               int64_t delay_us, rrl_verdict_t* verdict) noexcept {
    rrl::Outcome o;
    if (!outcome_of(outcome, &o) || s->fail > RRL_FAIL_LOCAL) return RRL_ERROR;

    rrl::Settings settings;
    settings.fail = static_cast<rrl::FailMode>(s->fail);
    settings.dry_run = s->dry_run != 0;
    settings.status_code = s->status_code;
    settings.problem_json = s->problem_json != 0;
    settings.headers = s->headers;
    settings.local_share = s->local_share;

    rrl::Verdict v = rrl::decide(settings, o, passed != 0, delay_us);
    verdict->status = static_cast<unsigned>(v.status);
    verdict->code = v.code;
    verdict->decided = v.decided;
    verdict->ask_local = v.ask_local;
    verdict->learn = v.learn;
    verdict->log = v.log;
    verdict->problem = v.problem;
    verdict->show = v.show;
    verdict->delay_us = v.delay_us;
    verdict->wait_ms = v.wait_ms;
    return RRL_OK;
}

size_t rrl_rejection_message(char* buf, size_t size, int dry_run, int outcome,
                             const rrl_call_limit_t* limit,
                             const char* zone_rate, size_t zone_rate_len,
                             int64_t retry_after) noexcept {
    rrl::Outcome o;
    if (!outcome_of(outcome, &o)) return 0;

    return guarded("rrl_rejection_message", size_t{0}, [&] {
        rrl::CallLimit l{};
        l.limit = limit->limit;
        l.period_ms = limit->period_ms;
        std::string rate =
            rrl::logged_rate(l, limit->override, {zone_rate, zone_rate_len});
        return rrl::capi::put(
            rrl::rejection_message(
                dry_run != 0, o, {limit->zone, limit->zone_len},
                {reinterpret_cast<const char*>(limit->key), limit->key_len},
                rate, retry_after),
            buf, size);
    });
}
