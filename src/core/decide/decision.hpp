// The handler's rules: what a request's outcome (Redis's reply, a failure,
// the deny cache, the local zone) means for its $redis_ratelimit_status,
// its response, the deny cache, the log, the headers and the metrics,
// given its location's settings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rrl {

// $redis_ratelimit_status; none: not limited
enum class Status : unsigned {
    none = 0,
    passed,
    rejected,
    rejected_dry_run,
    failed_open,
    failed_closed,
    failed_local,
    delayed,          // passed, then waits for its slot (delay=D)
    delayed_dry_run,  // would have waited: dry run does not
};

enum class FailMode : unsigned { open = 0, closed, local };

enum class Outcome {
    no_key,        // every key was empty: no limit applies
    reply,         // Redis's reply, decoded
    failed,        // no call, an error, a reply not the script's
    cached,        // the deny cache rejected the request
    local,         // the local zone decided (fail local)
    local_failed,  // the local zone could not (no memory)
};

// the headers a decided request shows (bits)
namespace show {
constexpr unsigned legacy = 1;        // X-RateLimit-*
constexpr unsigned draft = 2;         // RateLimit-Policy, RateLimit
constexpr unsigned retry_after = 4;   // standard HTTP on a 429 or 503
constexpr unsigned local_limits = 8;  // what this server allows alone
}  // namespace show

// a location's settings
struct Settings {
    FailMode fail = FailMode::open;
    bool dry_run = false;
    unsigned status_code = 429;
    bool problem_json = false;
    unsigned headers = show::legacy;  // show::legacy | show::draft, or 0
    std::uint64_t local_share = 1;    // K of local_share=1/K
};

struct Verdict {
    Status status = Status::none;
    unsigned code = 0;       // the response's status; 0: the request goes on
    bool decided = false;    // a decoded decision backs headers, variables
    bool ask_local = false;  // fail local: decide again on the local zone's
    bool learn = false;      // the deny cache keeps the rejection
    bool log = false;        // the rejection is logged
    bool problem = false;    // the handler sends a problem+json body
    unsigned show = 0;       // show:: bits
    // a passed request's delay (delay=D), $redis_ratelimit_delay: also
    // in dry run, which shows the delay that would have been applied
    std::int64_t delay_us = 0;
    std::uint64_t wait_ms = 0;  // the wait to apply, rounded up; 0 in dry run
};

// passed: the decoded decision's, for reply, cached and local; delay_us:
// its wait (Request::delay_us()), for reply and local
Verdict decide(const Settings& settings, Outcome outcome, bool passed,
               std::int64_t delay_us = 0);

// $redis_ratelimit_status's text; "" for none or an unknown status
std::string_view status_text(Status status);

// the log line of a rejection, naming the reported limit
std::string rejection_message(bool dry_run, Outcome outcome,
                              std::string_view zone, std::string_view key,
                              std::string_view rate, std::int64_t retry_after);

}  // namespace rrl
