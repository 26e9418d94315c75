// rrl::decode_reply / rrl_reply_decode: validation of the script's reply,
// the limit reported in headers, reset time and Retry-After; and the error
// reply classifier.
#include "script/script_reply.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "tests/support/call_limit.hpp"
#include "topology/redis_errors.hpp"

namespace {

constexpr std::int64_t kSecond = 1000000;
constexpr std::int64_t kNow = 1700000000 * kSecond + 250000;  // .25 s

struct Limit {
    std::int64_t passed, remaining, reset_after_us, retry_after_us;
};

std::vector<std::int64_t> reply(std::int64_t passed, std::int64_t now,
                                const std::vector<Limit>& limits) {
    std::vector<std::int64_t> v = {passed, now};
    for (const Limit& l : limits) {
        v.insert(v.end(), {l.passed, l.remaining, l.reset_after_us,
                           l.retry_after_us});
    }
    return v;
}

struct Decoded {
    int rc;
    std::vector<rrl_limit_result_t> limits;
    rrl_decision_t decision;
};

Decoded decode(const std::vector<std::int64_t>& v, size_t nlimits) {
    Decoded d{};
    d.limits.assign(nlimits + 1, rrl_limit_result_t{7, 7, 7, 7});
    d.decision = rrl_decision_t{7, 7, 7, 7, 7, 7, 7};
    d.rc = rrl_test::reply_decode(v.data(), v.size(), nlimits, d.limits.data(),
                                  &d.decision);
    // the C API writes exactly nlimits results
    EXPECT_EQ(d.limits[nlimits].passed, 7);
    EXPECT_EQ(d.limits[nlimits].remaining, 7);
    return d;
}

void expect_rejected_reply(const std::vector<std::int64_t>& v, size_t nlimits) {
    std::string error;
    EXPECT_FALSE(rrl::decode_reply(v.data(), v.size(), nlimits, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(decode(v, nlimits).rc, RRL_ERROR);
}

TEST(ReplyDecode, SinglePassedLimit) {
    auto v = reply(1, kNow, {{1, 4, 750000, 0}});
    Decoded d = decode(v, 1);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.limits[0].passed, 1);
    EXPECT_EQ(d.limits[0].remaining, 4);
    EXPECT_EQ(d.limits[0].reset_after_us, 750000);
    EXPECT_EQ(d.limits[0].retry_after_us, 0);
    EXPECT_EQ(d.decision.passed, 1);
    EXPECT_EQ(d.decision.now_us, kNow);
    EXPECT_EQ(d.decision.reported, 0u);
    EXPECT_EQ(d.decision.remaining, 4);
    EXPECT_EQ(d.decision.reset_unix, 1700000001);  // .25 + .75 = exactly 1
    EXPECT_EQ(d.decision.retry_after, 0);
}

TEST(ReplyDecode, SingleRejectedLimit) {
    auto v = reply(0, kNow, {{0, 0, 2500000, 2500000}});
    Decoded d = decode(v, 1);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.passed, 0);
    EXPECT_EQ(d.decision.remaining, 0);
    EXPECT_EQ(d.decision.reset_unix, 1700000003);  // .25 + 2.5 = 2.75 -> 3
    EXPECT_EQ(d.decision.retry_after, 3);          // 2.5 s -> 3
}

TEST(ReplyDecode, WrongElementCount) {
    auto v = reply(1, kNow, {{1, 4, 1000, 0}});
    expect_rejected_reply(v, 2);
    std::vector<std::int64_t> longer = v;
    longer.push_back(0);
    expect_rejected_reply(longer, 1);
    std::vector<std::int64_t> shorter(v.begin(), v.end() - 1);
    expect_rejected_reply(shorter, 1);
    expect_rejected_reply({1, kNow}, 0);  // no limits at all

    std::string error;
    rrl::decode_reply(v.data(), v.size(), 2, &error);
    EXPECT_EQ(error, "reply has 6 elements, expected 10");
}

TEST(ReplyDecode, DecisionMustBeAFlag) {
    expect_rejected_reply(reply(2, kNow, {{1, 4, 1000, 0}}), 1);
    expect_rejected_reply(reply(-1, kNow, {{0, 0, 1000, 1000}}), 1);
    expect_rejected_reply(reply(1, kNow, {{2, 4, 1000, 0}}), 1);
    expect_rejected_reply(reply(0, kNow, {{-1, 0, 1000, 1000}}), 1);
}

TEST(ReplyDecode, TimeMustBePositive) {
    expect_rejected_reply(reply(1, 0, {{1, 4, 1000, 0}}), 1);
    expect_rejected_reply(reply(1, -5, {{1, 4, 1000, 0}}), 1);
    EXPECT_EQ(decode(reply(1, 1, {{1, 4, 1000, 0}}), 1).rc, RRL_OK);
}

// found by fuzz_reply: a hostile TIME near INT64_MAX overflowed Reset
TEST(ReplyDecode, TimeBeyondTheScriptsDoublesIsRefused) {
    const std::int64_t max_time = std::int64_t{1} << 53;
    EXPECT_EQ(decode(reply(1, max_time, {{1, 4, 1000, 0}}), 1).rc, RRL_OK);
    expect_rejected_reply(reply(1, max_time + 1, {{1, 4, 1000, 0}}), 1);
    expect_rejected_reply(reply(1, INT64_MAX, {{1, 0, 1, 0}}), 1);
    expect_rejected_reply(reply(1, INT64_MAX, {{1, 0, 0, 0}}), 1);
}

TEST(RetryAfterSeconds, NoOverflowAtTheExtremes) {
    EXPECT_EQ(rrl::retry_after_seconds(INT64_MAX), INT64_MAX / 1000000 + 1);
    EXPECT_EQ(rrl::seconds_up(INT64_MAX), INT64_MAX / 1000000 + 1);
    EXPECT_EQ(rrl::seconds_up(INT64_MAX - INT64_MAX % 1000000),
              INT64_MAX / 1000000);
}

TEST(ReplyDecode, NegativeRemainingOrDurations) {
    expect_rejected_reply(reply(1, kNow, {{1, -1, 1000, 0}}), 1);
    expect_rejected_reply(reply(1, kNow, {{1, 4, -1, 0}}), 1);
    expect_rejected_reply(reply(0, kNow, {{0, 0, 1000, -1}}), 1);
    // over RRL_MAX_STATE_MS is not a duration the script computes
    const std::int64_t longest =
        static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;
    EXPECT_EQ(decode(reply(1, kNow, {{1, 4, longest, 0}}), 1).rc, RRL_OK);
    EXPECT_EQ(decode(reply(0, kNow, {{0, 0, 1000, longest}}), 1).rc, RRL_OK);
    expect_rejected_reply(reply(1, kNow, {{1, 4, longest + 1, 0}}), 1);
    expect_rejected_reply(reply(0, kNow, {{0, 0, 1000, longest + 1}}), 1);
}

TEST(ReplyDecode, RetryAfterMustMatchTheLimitsOwnDecision) {
    // rejected but "retry now"
    expect_rejected_reply(reply(0, kNow, {{0, 0, 1000, 0}}), 1);
    // passed but "retry later"
    expect_rejected_reply(reply(1, kNow, {{1, 3, 1000, 1}}), 1);
}

TEST(ReplyDecode, DecisionMustAgreeWithLimits) {
    expect_rejected_reply(reply(1, kNow, {{1, 3, 1000, 0}, {0, 0, 1000, 5}}), 2);
    expect_rejected_reply(reply(0, kNow, {{1, 3, 1000, 0}, {1, 0, 1000, 0}}), 2);
    std::string error;
    auto v = reply(0, kNow, {{1, 3, 1000, 0}});
    rrl::decode_reply(v.data(), v.size(), 1, &error);
    EXPECT_EQ(error, "inconsistent decision");
}

TEST(ReplyDecode, ErrorPointerMayBeNull) {
    auto v = reply(2, kNow, {{1, 4, 1000, 0}});
    EXPECT_FALSE(rrl::decode_reply(v.data(), v.size(), 1, nullptr));
}

TEST(ReportedLimit, LowestRemainingWhenPassed) {
    auto v = reply(1, kNow, {{1, 9, 5 * kSecond, 0},
                             {1, 2, 1 * kSecond, 0},
                             {1, 5, 60 * kSecond, 0}});
    Decoded d = decode(v, 3);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.reported, 1u);
    EXPECT_EQ(d.decision.remaining, 2);
    EXPECT_EQ(d.decision.reset_unix, 1700000002);  // .25 + 1 -> 2
}

TEST(ReportedLimit, TieOnRemainingGoesToLongerReset) {
    auto v = reply(1, kNow, {{1, 2, 1 * kSecond, 0},
                             {1, 2, 30 * kSecond, 0},
                             {1, 2, 10 * kSecond, 0}});
    Decoded d = decode(v, 3);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.reported, 1u);
    EXPECT_EQ(d.decision.reset_unix, 1700000031);
    // equal remaining and equal wait: the first one stays
    auto w = reply(1, kNow, {{1, 2, kSecond, 0}, {1, 2, kSecond, 0}});
    EXPECT_EQ(decode(w, 2).decision.reported, 0u);
}

TEST(ReportedLimit, OnlyRejectingLimitsWhenRejected) {
    // limit 0 passed with 0 remaining (lowest overall) but did not reject
    auto v = reply(0, kNow, {{1, 0, 1 * kSecond, 0},
                             {0, 3, 40 * kSecond, 20 * kSecond},
                             {1, 1, 2 * kSecond, 0}});
    Decoded d = decode(v, 3);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.passed, 0);
    EXPECT_EQ(d.decision.reported, 1u);
    EXPECT_EQ(d.decision.remaining, 3);
    EXPECT_EQ(d.decision.reset_unix, 1700000041);
    EXPECT_EQ(d.decision.retry_after, 20);
}

TEST(ReportedLimit, RejectedTieGoesToLongerRetry) {
    auto v = reply(0, kNow, {{0, 0, 50 * kSecond, 4 * kSecond},
                             {0, 0, 10 * kSecond, 9 * kSecond},
                             {0, 1, 99 * kSecond, 99 * kSecond}});
    Decoded d = decode(v, 3);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.reported, 1u);  // remaining 0, longer retry
    EXPECT_EQ(d.decision.remaining, 0);
    EXPECT_EQ(d.decision.reset_unix, 1700000011);  // .25 + 10 -> 11
    // Retry-After is the longest wait of all rejecting limits
    EXPECT_EQ(d.decision.retry_after, 99);
}

TEST(ReportedLimit, RetryAfterIgnoresPassedLimits) {
    auto v = reply(0, kNow, {{1, 5, 3600 * kSecond, 0},
                             {0, 0, 2 * kSecond, 1500000}});
    Decoded d = decode(v, 2);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.retry_after, 2);
}

struct ResetCase {
    std::int64_t now_us;
    std::int64_t reset_after_us;
    std::int64_t reset_unix;
};

void PrintTo(const ResetCase& c, std::ostream* os) {
    *os << c.now_us << "+" << c.reset_after_us;
}

class ResetUnix : public ::testing::TestWithParam<ResetCase> {};

TEST_P(ResetUnix, RoundsUpToWholeSeconds) {
    const ResetCase& c = GetParam();
    Decoded d = decode(reply(1, c.now_us, {{1, 1, c.reset_after_us, 0}}), 1);
    ASSERT_EQ(d.rc, RRL_OK);
    EXPECT_EQ(d.decision.reset_unix, c.reset_unix)
        << c.now_us << " + " << c.reset_after_us;
}

constexpr std::int64_t k = 1700000000;

INSTANTIATE_TEST_SUITE_P(
    Boundaries, ResetUnix,
    ::testing::Values(ResetCase{k * kSecond, 0, k},
                      ResetCase{k * kSecond + 1, 0, k + 1},
                      ResetCase{k * kSecond - 1, 0, k},
                      ResetCase{k * kSecond, 1, k + 1},
                      ResetCase{k * kSecond, kSecond, k + 1},
                      ResetCase{k * kSecond, kSecond + 1, k + 2},
                      ResetCase{k * kSecond - 1, 1, k},
                      ResetCase{k * kSecond + 1, kSecond - 1, k + 1},
                      ResetCase{k * kSecond + 1, kSecond, k + 2},
                      ResetCase{1, 0, 1}));

struct RetryCase {
    std::int64_t us;
    std::int64_t seconds;
};

void PrintTo(const RetryCase& c, std::ostream* os) { *os << c.us << "us"; }

class RetryAfter : public ::testing::TestWithParam<RetryCase> {};

TEST_P(RetryAfter, WholeSecondsUpAtLeastOne) {
    EXPECT_EQ(rrl::retry_after_seconds(GetParam().us), GetParam().seconds)
        << GetParam().us;
    EXPECT_EQ(rrl::retry_after_seconds(GetParam().us), GetParam().seconds);
}

TEST(RetryAfterDecoded, WholeSecondsUpAtLeastOne) {
    const RetryCase cases[] = {{1, 1},       {999999, 1},    {1000000, 1},
                               {1000001, 2}, {59999999, 60}, {60000001, 61}};
    for (const RetryCase& c : cases) {
        Decoded d = decode(reply(0, kNow, {{0, 0, 0, c.us}}), 1);
        ASSERT_EQ(d.rc, RRL_OK) << c.us;
        EXPECT_EQ(d.decision.retry_after, c.seconds) << c.us;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Values, RetryAfter,
    ::testing::Values(RetryCase{0, 1}, RetryCase{-5, 1}, RetryCase{1, 1},
                      RetryCase{999999, 1}, RetryCase{1000000, 1},
                      RetryCase{1000001, 2}, RetryCase{59999999, 60},
                      RetryCase{60000000, 60}, RetryCase{60000001, 61}));

TEST(SecondsUp, Values) {
    EXPECT_EQ(rrl::seconds_up(0), 0);
    EXPECT_EQ(rrl::seconds_up(1), 1);
    EXPECT_EQ(rrl::seconds_up(1000000), 1);
    EXPECT_EQ(rrl::seconds_up(1000001), 2);
}

TEST(ReplyErrorKind, NoScript) {
    const std::string noscript = "NOSCRIPT No matching script. Please use EVAL.";
    EXPECT_EQ(rrl::error_kind(noscript), RRL_REPLY_NOSCRIPT);
    EXPECT_EQ(rrl::error_kind("NOSCRIPT"), RRL_REPLY_NOSCRIPT);
    EXPECT_TRUE(rrl::is_noscript(noscript));
}

TEST(ReplyErrorKind, OtherErrors) {
    for (std::string e :
         {std::string("ERR redis_ratelimit: bad arguments"),
          std::string("ERR Error running script"), std::string(""),
          std::string("NOSCRIPTS"), std::string("noscript No matching"),
          std::string(" NOSCRIPT No matching"), std::string("NOSCRIP"),
          std::string("BUSY Redis is busy running a script")}) {
        EXPECT_EQ(rrl::error_kind(e), RRL_REPLY_ERROR) << e;
    }
    // only the given length counts
    EXPECT_EQ(rrl::error_kind(std::string_view("NOSCRIPT x", 7)),
              RRL_REPLY_ERROR);
    // READONLY, MOVED and the other cluster errors: cluster_test.cpp
}

}  // namespace
