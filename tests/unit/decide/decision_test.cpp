// rrl::decide and its C API: what each outcome means for the request.
#include "decide/decision.hpp"

#include <gtest/gtest.h>

#include <string>

#include "api/rrl_decision.h"

namespace {

using rrl::Outcome;
using rrl::Settings;
using rrl::Status;
namespace show = rrl::show;

Settings settings(rrl::FailMode fail = rrl::FailMode::open,
                  bool dry_run = false) {
    Settings s;
    s.fail = fail;
    s.dry_run = dry_run;
    s.status_code = 429;
    s.headers = show::legacy;
    return s;
}

TEST(Decision, NoKeyPassesUndecided) {
    auto v = rrl::decide(settings(), Outcome::no_key, false);
    EXPECT_EQ(v.status, Status::passed);
    EXPECT_EQ(v.code, 0u);
    EXPECT_FALSE(v.decided);
    EXPECT_FALSE(v.log);
    EXPECT_EQ(v.show, 0u);
}

TEST(Decision, ReplyPassed) {
    auto v = rrl::decide(settings(), Outcome::reply, true);
    EXPECT_EQ(v.status, Status::passed);
    EXPECT_EQ(v.code, 0u);
    EXPECT_TRUE(v.decided);
    EXPECT_FALSE(v.log);
    EXPECT_FALSE(v.learn);
    EXPECT_FALSE(v.problem);
    EXPECT_EQ(v.show, show::legacy);
}

TEST(Decision, ReplyRejectedIsLoggedLearnedAndRetried) {
    Settings s = settings();
    s.status_code = 503;
    s.headers = show::legacy | show::draft;
    auto v = rrl::decide(s, Outcome::reply, false);
    EXPECT_EQ(v.status, Status::rejected);
    EXPECT_EQ(v.code, 503u);
    EXPECT_TRUE(v.decided);
    EXPECT_TRUE(v.log);
    EXPECT_TRUE(v.learn);
    EXPECT_FALSE(v.problem);
    EXPECT_EQ(v.show, show::legacy | show::draft | show::retry_after);
}

TEST(Decision, ProblemJsonOnlyForARejectionSent) {
    Settings s = settings();
    s.problem_json = true;
    EXPECT_TRUE(rrl::decide(s, Outcome::reply, false).problem);
    EXPECT_TRUE(rrl::decide(s, Outcome::cached, false).problem);
    EXPECT_FALSE(rrl::decide(s, Outcome::reply, true).problem);
    s.fail = rrl::FailMode::closed;
    EXPECT_FALSE(rrl::decide(s, Outcome::failed, false).problem);
    s.dry_run = true;
    EXPECT_FALSE(rrl::decide(s, Outcome::reply, false).problem);
}

TEST(Decision, DryRunRejectsNothingAndLearnsNothing) {
    auto v =
        rrl::decide(settings(rrl::FailMode::open, true), Outcome::reply, false);
    EXPECT_EQ(v.status, Status::rejected_dry_run);
    EXPECT_EQ(v.code, 0u);
    EXPECT_TRUE(v.decided);
    EXPECT_TRUE(v.log);
    EXPECT_FALSE(v.learn);
    EXPECT_EQ(v.show, show::legacy);
}

TEST(Decision, CachedRejectionIsRedisOne) {
    Settings s = settings();
    s.headers = 0;
    auto v = rrl::decide(s, Outcome::cached, true);
    EXPECT_EQ(v.status, Status::rejected);
    EXPECT_EQ(v.code, 429u);
    EXPECT_TRUE(v.decided);
    EXPECT_TRUE(v.log);
    EXPECT_FALSE(v.learn);  // it is in the cache already
    EXPECT_EQ(v.show, show::retry_after);
}

TEST(Decision, FailOpen) {
    auto v = rrl::decide(settings(), Outcome::failed, false);
    EXPECT_EQ(v.status, Status::failed_open);
    EXPECT_EQ(v.code, 0u);
    EXPECT_FALSE(v.decided);
    EXPECT_FALSE(v.ask_local);
    EXPECT_FALSE(v.log);
}

TEST(Decision, FailClosedRejectsUnlessDryRun) {
    auto v =
        rrl::decide(settings(rrl::FailMode::closed), Outcome::failed, false);
    EXPECT_EQ(v.status, Status::failed_closed);
    EXPECT_EQ(v.code, 429u);
    EXPECT_FALSE(v.decided);
    EXPECT_EQ(v.show, 0u);

    v = rrl::decide(settings(rrl::FailMode::closed, true), Outcome::failed,
                    false);
    EXPECT_EQ(v.status, Status::failed_closed);
    EXPECT_EQ(v.code, 0u);
}

TEST(Decision, FailLocalAsksTheLocalZone) {
    auto v =
        rrl::decide(settings(rrl::FailMode::local), Outcome::failed, false);
    EXPECT_EQ(v.status, Status::failed_local);
    EXPECT_TRUE(v.ask_local);
    EXPECT_FALSE(v.decided);
}

TEST(Decision, LocalDecision) {
    Settings s = settings(rrl::FailMode::local);
    auto v = rrl::decide(s, Outcome::local, true);
    EXPECT_EQ(v.status, Status::failed_local);
    EXPECT_EQ(v.code, 0u);
    EXPECT_TRUE(v.decided);
    EXPECT_FALSE(v.log);
    EXPECT_EQ(v.show, show::legacy);

    v = rrl::decide(s, Outcome::local, false);
    EXPECT_EQ(v.code, 429u);
    EXPECT_TRUE(v.log);
    EXPECT_FALSE(v.learn);
    EXPECT_EQ(v.show, show::legacy | show::retry_after);

    s.dry_run = true;
    v = rrl::decide(s, Outcome::local, false);
    EXPECT_EQ(v.code, 0u);
    EXPECT_TRUE(v.log);
    EXPECT_EQ(v.show, show::legacy);
}

TEST(Decision, LocalShareShowsWhatThisServerAllows) {
    Settings s = settings(rrl::FailMode::local);
    s.local_share = 3;
    EXPECT_EQ(rrl::decide(s, Outcome::local, true).show,
              show::legacy | show::local_limits);
    EXPECT_EQ(rrl::decide(s, Outcome::reply, true).show, show::legacy);
}

TEST(Decision, LocalFailedRejectsUndecided) {
    auto v = rrl::decide(settings(rrl::FailMode::local), Outcome::local_failed,
                         true);
    EXPECT_EQ(v.status, Status::failed_local);
    EXPECT_EQ(v.code, 429u);
    EXPECT_FALSE(v.decided);
    EXPECT_FALSE(v.log);
    v = rrl::decide(settings(rrl::FailMode::local, true), Outcome::local_failed,
                    true);
    EXPECT_EQ(v.code, 0u);
}

TEST(Decision, StatusText) {
    const char* texts[] = {"",
                           "PASSED",
                           "REJECTED",
                           "REJECTED_DRY_RUN",
                           "FAILED_OPEN",
                           "FAILED_CLOSED",
                           "FAILED_LOCAL",
                           "DELAYED",
                           "DELAYED_DRY_RUN",
                           ""};
    for (unsigned i = 0; i < 10; i++) {
        std::string_view t = rrl::status_text(static_cast<rrl::Status>(i));
        EXPECT_EQ(std::string(t), texts[i]) << i;
        EXPECT_EQ(t.data()[t.size()], '\0');
    }
}

TEST(Decision, RejectionMessage) {
    EXPECT_EQ(
        rrl::rejection_message(false, Outcome::reply, "D", "t", "2r/d", 86400),
        "limiting requests by zone \"D\", key \"t\", rate 2r/d, "
        "retry after 86400s");
    EXPECT_EQ(
        rrl::rejection_message(true, Outcome::local, "A", "a\"b", "5r/s", 1),
        "limiting requests, dry run, by zone \"A\" (local), "
        "key \"a\\x22b\", rate 5r/s, retry after 1s");
    EXPECT_EQ(
        rrl::rejection_message(false, Outcome::cached, "A", "k", "5r/s", 2),
        "limiting requests by zone \"A\" (cached), key \"k\", rate "
        "5r/s, retry after 2s");
    std::string m = rrl::rejection_message(false, Outcome::reply, "A",
                                           std::string(1000, 'x'), "1r/s", 1);
    EXPECT_NE(m.find(std::string(253, 'x') + "...\""), std::string::npos);
}

TEST(DecisionCapi, Decide) {
    rrl_settings_t s = {
        RRL_FAIL_CLOSED, 0, 503, 1, RRL_SHOW_LEGACY | RRL_SHOW_DRAFT, 1};
    rrl_verdict_t v;
    ASSERT_EQ(rrl_decide(&s, RRL_OUTCOME_REPLY, 0, 0, &v), RRL_OK);
    EXPECT_EQ(v.status, unsigned{RRL_STATUS_REJECTED});
    EXPECT_EQ(v.code, 503u);
    EXPECT_TRUE(v.decided && v.learn && v.log && v.problem);
    EXPECT_FALSE(v.ask_local);
    EXPECT_EQ(v.show, unsigned{RRL_SHOW_LEGACY | RRL_SHOW_DRAFT |
                               RRL_SHOW_RETRY_AFTER});

    s.fail = RRL_FAIL_LOCAL;
    ASSERT_EQ(rrl_decide(&s, RRL_OUTCOME_FAILED, 0, 0, &v), RRL_OK);
    EXPECT_TRUE(v.ask_local);

    EXPECT_EQ(rrl_decide(&s, 6, 0, 0, &v), RRL_ERROR);
    EXPECT_EQ(rrl_decide(&s, -1, 0, 0, &v), RRL_ERROR);
    s.fail = 3;
    EXPECT_EQ(rrl_decide(&s, RRL_OUTCOME_REPLY, 0, 0, &v), RRL_ERROR);
}

TEST(Decision, PassedWithADelayIsDelayedAndWaits) {
    auto v = rrl::decide(settings(), Outcome::reply, true, 100500);
    EXPECT_EQ(v.status, Status::delayed);
    EXPECT_EQ(v.code, 0u);
    EXPECT_TRUE(v.decided);
    EXPECT_FALSE(v.log);
    EXPECT_FALSE(v.learn);
    EXPECT_EQ(v.delay_us, 100500);
    EXPECT_EQ(v.wait_ms, 101u);  // rounded up: never before the slot

    v = rrl::decide(settings(), Outcome::reply, true, 100000);
    EXPECT_EQ(v.wait_ms, 100u);
    v = rrl::decide(settings(), Outcome::reply, true, 1);
    EXPECT_EQ(v.wait_ms, 1u);
}

TEST(Decision, DryRunShowsTheDelayWithoutWaiting) {
    auto v = rrl::decide(settings(rrl::FailMode::open, true), Outcome::reply,
                         true, 250000);
    EXPECT_EQ(v.status, Status::delayed_dry_run);
    EXPECT_EQ(v.code, 0u);
    EXPECT_EQ(v.delay_us, 250000);
    EXPECT_EQ(v.wait_ms, 0u);
}

TEST(Decision, NoDelayIsPassed) {
    auto v = rrl::decide(settings(), Outcome::reply, true, 0);
    EXPECT_EQ(v.status, Status::passed);
    EXPECT_EQ(v.delay_us, 0);
    EXPECT_EQ(v.wait_ms, 0u);
}

TEST(Decision, RejectionsAreNeverDelayed) {
    for (bool dry_run : {false, true}) {
        auto v = rrl::decide(settings(rrl::FailMode::open, dry_run),
                             Outcome::reply, false, 100000);
        EXPECT_EQ(v.status,
                  dry_run ? Status::rejected_dry_run : Status::rejected);
        EXPECT_EQ(v.delay_us, 0);
        EXPECT_EQ(v.wait_ms, 0u);
    }
    auto v = rrl::decide(settings(), Outcome::cached, true, 100000);
    EXPECT_EQ(v.status, Status::rejected);
    EXPECT_EQ(v.wait_ms, 0u);
}

TEST(Decision, FailLocalWaitsAndStaysFailedLocal) {
    auto v = rrl::decide(settings(rrl::FailMode::local), Outcome::local, true,
                         200000);
    EXPECT_EQ(v.status, Status::failed_local);
    EXPECT_EQ(v.code, 0u);
    EXPECT_EQ(v.delay_us, 200000);
    EXPECT_EQ(v.wait_ms, 200u);

    v = rrl::decide(settings(rrl::FailMode::local, true), Outcome::local, true,
                    200000);
    EXPECT_EQ(v.status, Status::failed_local);
    EXPECT_EQ(v.delay_us, 200000);
    EXPECT_EQ(v.wait_ms, 0u);
}

TEST(Decision, FailuresAreNeverDelayed) {
    for (Outcome o :
         {Outcome::no_key, Outcome::failed, Outcome::local_failed}) {
        auto v = rrl::decide(settings(rrl::FailMode::local), o, true, 100000);
        EXPECT_EQ(v.delay_us, 0);
        EXPECT_EQ(v.wait_ms, 0u);
    }
}

TEST(DecisionCapi, Delayed) {
    rrl_settings_t s = {RRL_FAIL_OPEN, 0, 429, 0, RRL_SHOW_LEGACY, 1};
    rrl_verdict_t v;
    ASSERT_EQ(rrl_decide(&s, RRL_OUTCOME_REPLY, 1, 300000, &v), RRL_OK);
    EXPECT_EQ(v.status, unsigned{RRL_STATUS_DELAYED});
    EXPECT_EQ(v.delay_us, 300000);
    EXPECT_EQ(v.wait_ms, 300u);
    s.dry_run = 1;
    ASSERT_EQ(rrl_decide(&s, RRL_OUTCOME_REPLY, 1, 300000, &v), RRL_OK);
    EXPECT_EQ(v.status, unsigned{RRL_STATUS_DELAYED_DRY_RUN});
    EXPECT_EQ(v.wait_ms, 0u);
    EXPECT_STREQ(rrl::status_text(static_cast<rrl::Status>(v.status)).data(),
                 "DELAYED_DRY_RUN");
}

TEST(DecisionCapi, Message) {
    const unsigned char key[] = "k";
    rrl_call_limit_t l{};
    l.zone = "Z";
    l.zone_len = 1;
    l.key = key;
    l.key_len = 1;
    char buf[128];
    size_t n = rrl_rejection_message(buf, sizeof(buf), 0, RRL_OUTCOME_REPLY, &l,
                                     "1r/s", 4, 3);
    EXPECT_EQ(std::string(buf, n),
              "limiting requests by zone \"Z\", key \"k\", rate 1r/s, "
              "retry after 3s");
    EXPECT_EQ(
        rrl_rejection_message(buf, 4, 0, RRL_OUTCOME_REPLY, &l, "1r/s", 4, 3),
        n);
    EXPECT_EQ(rrl_rejection_message(buf, sizeof(buf), 0, 9, &l, "1r/s", 4, 3),
              0u);
}

}  // namespace
