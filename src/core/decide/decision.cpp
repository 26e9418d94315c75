#include "decide/decision.hpp"

#include "script/key.hpp"

namespace rrl {

namespace {

// a dry run rejects nothing, whatever the cause
unsigned rejection_code(const Settings& s) {
    return s.dry_run ? 0 : s.status_code;
}

}  // namespace

Verdict decide(const Settings& s, Outcome outcome, bool passed,
               std::int64_t delay_us) {
    Verdict v;

    switch (outcome) {
        case Outcome::no_key:
            v.status = Status::passed;
            return v;

        case Outcome::failed:
            if (s.fail == FailMode::local) {
                v.status = Status::failed_local;
                v.ask_local = true;
            } else if (s.fail == FailMode::closed) {
                v.status = Status::failed_closed;
                v.code = rejection_code(s);
            } else {
                v.status = Status::failed_open;
            }
            return v;

        case Outcome::local_failed:
            // no memory for the key: rejected, as limit_req does
            v.status = Status::failed_local;
            v.code = rejection_code(s);
            return v;

        case Outcome::reply:
            v.status = passed      ? Status::passed
                       : s.dry_run ? Status::rejected_dry_run
                                   : Status::rejected;
            v.learn = !passed && !s.dry_run;
            break;

        case Outcome::cached:
            // the deny cache answers no dry run: a rejection as Redis's
            v.status = Status::rejected;
            passed = false;
            break;

        case Outcome::local:
            v.status = Status::failed_local;
            break;
    }

    if (passed && delay_us > 0) {
        // fail local stays FAILED_LOCAL, and waits as well
        if (v.status == Status::passed) {
            v.status = s.dry_run ? Status::delayed_dry_run : Status::delayed;
        }
        v.delay_us = delay_us;
        v.wait_ms = s.dry_run ? 0
                              : static_cast<std::uint64_t>(delay_us / 1000) +
                                    (delay_us % 1000 != 0 ? 1 : 0);
    }

    v.decided = true;
    v.log = !passed;
    v.code = passed                       ? 0
             : outcome == Outcome::cached ? s.status_code
                                          : rejection_code(s);
    v.problem = s.problem_json && v.code != 0;
    v.show = s.headers & (show::legacy | show::draft);

    if (v.status == Status::rejected ||
        (v.status == Status::failed_local && v.code != 0)) {
        v.show |= show::retry_after;
    }

    if (v.status == Status::failed_local && s.local_share > 1) {
        v.show |= show::local_limits;
    }

    return v;
}

std::string_view status_text(Status status) {
    switch (status) {
        case Status::passed:
            return "PASSED";
        case Status::rejected:
            return "REJECTED";
        case Status::rejected_dry_run:
            return "REJECTED_DRY_RUN";
        case Status::failed_open:
            return "FAILED_OPEN";
        case Status::failed_closed:
            return "FAILED_CLOSED";
        case Status::failed_local:
            return "FAILED_LOCAL";
        case Status::delayed:
            return "DELAYED";
        case Status::delayed_dry_run:
            return "DELAYED_DRY_RUN";
        default:
            return "";
    }
}

std::string rejection_message(bool dry_run, Outcome outcome,
                              std::string_view zone, std::string_view key,
                              std::string_view rate, std::int64_t retry_after) {
    std::string m = "limiting requests";
    if (dry_run) m += ", dry run,";
    m += " by zone \"";
    m += zone;
    m += '"';
    if (outcome == Outcome::cached) m += " (cached)";
    if (outcome == Outcome::local) m += " (local)";
    m += ", key \"";
    m += printable(key, 256);
    m += "\", rate ";
    m += rate;
    m += ", retry after " + std::to_string(retry_after) + "s";
    return m;
}

}  // namespace rrl
