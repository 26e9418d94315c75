// The real Lua script (rrl::script()) run by EVALSHA against a real
// redis-server, with the time injected through ARGV[1] (microseconds):
// loading, fixed_window, sliding_log, several limits, bad arguments. The
// newer algorithms are in script_algorithms_test.cpp; the fixture is in
// script_fixture.hpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "topology/redis_errors.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

class ScriptTest : public ScriptFixture {};

const std::string kFw = "rrl:{test:client}:fw";
const std::string kSl = "rrl:{test:client}:sl";

// --- loading --------------------------------------------------------------

TEST_F(ScriptTest, ScriptLoadReturnsTheEmbeddedSha1) {
    std::string_view script_text = rrl::script();
    const char* script = script_text.data();
    size_t len = script_text.size();
    EXPECT_EQ(redis_->status_or_string({"SCRIPT", "LOAD", {script, len}}),
              rrl_script_sha1());
    Reply exists = redis_->command({"SCRIPT", "EXISTS", rrl_script_sha1()});
    ASSERT_EQ(exists->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(exists->elements, 1u);
    EXPECT_EQ(exists->element[0]->integer, 1);
}

TEST_F(ScriptTest, EvalshaAfterScriptFlushIsNoscript) {
    ASSERT_EQ(redis_->status_or_string({"SCRIPT", "FLUSH"}), "OK");
    Reply r = evalsha({kFw}, {str(kT), "fixed_window", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(rrl::error_kind(std::string_view(r->str, r->len)),
              RRL_REPLY_NOSCRIPT)
        << r->str;
    // and it works again once loaded
    std::string_view script_text = rrl::script();
    const char* script = script_text.data();
    size_t len = script_text.size();
    ASSERT_EQ(redis_->status_or_string({"SCRIPT", "LOAD", {script, len}}),
              rrl_script_sha1());
    Result ok = run(kT, {fw(kFw, 5, 1000)});
    ASSERT_FALSE(ok.error) << ok.error_text;
    EXPECT_EQ(ok.passed, 1);
}

// --- fixed_window ---------------------------------------------------------

struct FwStep {
    std::int64_t at_us;  // offset from kT
    std::int64_t passed, remaining, reset_after_us, retry_after_us;
};

// rate 5 per 1000 ms; windows are [kT, kT+1s), [kT+1s, kT+2s)
TEST_F(ScriptTest, FixedWindowCountsExactlyAtWindowEdges) {
    const Limit l = fw(kFw, 5, 1000);
    const std::vector<FwStep> steps = {
        {0, 1, 4, 1000000, 0},
        {100 * kMs, 1, 3, 900000, 0},
        {200 * kMs, 1, 2, 800000, 0},
        {300 * kMs, 1, 1, 700000, 0},
        {400 * kMs, 1, 0, 600000, 0},
        {500 * kMs, 0, 0, 500000, 500000},  // 6th: rejected until window end
        {999999, 0, 0, 1, 1},               // 1 us before the end
        {kSecond, 1, 4, 1000000, 0},        // new window: count restarts
        {kSecond + 1, 1, 3, 999999, 0},
    };
    for (const FwStep& s : steps) {
        SCOPED_TRACE("t=" + str(s.at_us));
        expect_one(kT + s.at_us, l, s.passed, s.remaining, s.reset_after_us,
                   s.retry_after_us);
    }
    EXPECT_EQ(get(kFw), "1700000001:2");
}

TEST_F(ScriptTest, FixedWindowStateIsWindowIndexAndCount) {
    const Limit l = fw(kFw, 5, 1000);
    expect_one(kT + 250 * kMs, l, 1, 4, 750000, 0);
    EXPECT_EQ(get(kFw), "1700000000:1");
    expect_one(kT + 251 * kMs, l, 1, 3, 749000, 0);
    EXPECT_EQ(get(kFw), "1700000000:2");
}

TEST_F(ScriptTest, FixedWindowIgnoresStateOfAnotherWindow) {
    ASSERT_EQ(redis_->status_or_string({"SET", kFw, "1699999999:5"}), "OK");
    expect_one(kT, fw(kFw, 5, 1000), 1, 4, 1000000, 0);
    EXPECT_EQ(get(kFw), "1700000000:1");
}

TEST_F(ScriptTest, FixedWindowWindowsAlignOnTheEpoch) {
    // 60 s windows: kT is 1700000000 s = 28333333 min + 20 s
    const Limit l = fw(kFw, 1, 60000);
    expect_one(kT, l, 1, 0, 40 * kSecond, 0);
    expect_one(kT + 39 * kSecond, l, 0, 0, kSecond, kSecond);
    expect_one(kT + 40 * kSecond, l, 1, 0, 60 * kSecond, 0);
    EXPECT_EQ(get(kFw), "28333334:1");
}

TEST_F(ScriptTest, FixedWindowBurstAddsToCapacity) {
    const Limit l = fw(kFw, 5, 1000, /*burst=*/2);
    for (std::int64_t i = 0; i < 7; i++) {
        SCOPED_TRACE("request " + str(i + 1));
        expect_one(kT + i, l, 1, 6 - i, kSecond - i, 0);
    }
    expect_one(kT + 7, l, 0, 0, kSecond - 7, kSecond - 7);
    EXPECT_EQ(get(kFw), "1700000000:7");
}

TEST_F(ScriptTest, FixedWindowCostOverRemainingConsumesNothing) {
    expect_one(kT, fw(kFw, 5, 1000, 0, 4), 1, 1, kSecond, 0);
    EXPECT_EQ(get(kFw), "1700000000:4");
    // cost 2 with 1 remaining: rejected, remaining still 1
    expect_one(kT + 10, fw(kFw, 5, 1000, 0, 2), 0, 1, kSecond - 10, kSecond - 10);
    EXPECT_EQ(get(kFw), "1700000000:4");
    // the 1 left is still there for a cost-1 request
    expect_one(kT + 20, fw(kFw, 5, 1000, 0, 1), 1, 0, kSecond - 20, 0);
    EXPECT_EQ(get(kFw), "1700000000:5");
}

TEST_F(ScriptTest, FixedWindowCostOverCapacityAlwaysRejected) {
    // empty window: nothing to reset, retry after a whole period
    expect_one(kT + 300 * kMs, fw(kFw, 5, 1000, 0, 6), 0, 5, 0, kSecond);
    EXPECT_EQ(dump(kFw), "(nil)");
    // even at the start of a fresh window, and with burst counted
    expect_one(kT + kSecond, fw(kFw, 5, 1000, 2, 8), 0, 7, 0, kSecond);
    EXPECT_EQ(dump(kFw), "(nil)");
    // capacity exactly equal to cost passes
    expect_one(kT + kSecond, fw(kFw, 5, 1000, 2, 7), 1, 0, kSecond, 0);
}

TEST_F(ScriptTest, FixedWindowTtlEndsWithTheWindow) {
    // 700 ms to the window end
    expect_one(kT + 300 * kMs, fw(kFw, 5, 1000), 1, 4, 700000, 0);
    long long ttl = pttl(kFw);
    EXPECT_LE(ttl, 700);
    EXPECT_GT(ttl, 600);
    // 699.999 ms left: rounded up to 700 ms, never down
    ASSERT_EQ(redis_->integer({"DEL", kFw}), 1);
    expect_one(kT + 300 * kMs + 1, fw(kFw, 5, 1000), 1, 4, 699999, 0);
    ttl = pttl(kFw);
    EXPECT_LE(ttl, 700);
    EXPECT_GT(ttl, 600);
    // 1 us left: 1 ms
    ASSERT_EQ(redis_->integer({"DEL", kFw}), 1);
    expect_one(kT + kSecond - 1, fw(kFw, 5, 1000), 1, 4, 1, 0);
    ttl = pttl(kFw);
    EXPECT_LE(ttl, 1);
}

TEST_F(ScriptTest, FixedWindowRejectionChangesNothing) {
    const Limit l = fw(kFw, 2, 1000);
    expect_one(kT, l, 1, 1, kSecond, 0);
    expect_one(kT + 1, l, 1, 0, kSecond - 1, 0);
    const std::string before = dump(kFw);
    const long long ttl_before = pttl(kFw);
    for (int i = 0; i < 20; i++) {
        expect_one(kT + 2 + i, l, 0, 0, kSecond - 2 - i, kSecond - 2 - i);
    }
    EXPECT_EQ(dump(kFw), before);
    EXPECT_EQ(get(kFw), "1700000000:2");
    EXPECT_LE(pttl(kFw), ttl_before);  // not extended
}

// --- sliding_log ----------------------------------------------------------

// rate 3 per 10 s
TEST_F(ScriptTest, SlidingLogCountsExactlyAtWindowEdges) {
    const std::int64_t t0 = kT + 123456;
    const Limit l = sl(kSl, 3, 10000);
    const std::vector<FwStep> steps = {
        {0, 1, 2, 10 * kSecond, 0},
        {kSecond, 1, 1, 10 * kSecond, 0},
        {2 * kSecond, 1, 0, 10 * kSecond, 0},
        // full: the oldest (t0) leaves at t0+10s; the newest at t0+12s
        {3 * kSecond, 0, 0, 9 * kSecond, 7 * kSecond},
        {10 * kSecond - 1, 0, 0, 2 * kSecond + 1, 1},
        {10 * kSecond, 1, 0, 10 * kSecond, 0},  // t0 has left
        // now t0+1s is the oldest
        {10 * kSecond + 1, 0, 0, 10 * kSecond - 1, kSecond - 1},
    };
    for (const FwStep& s : steps) {
        SCOPED_TRACE("t0+" + str(s.at_us));
        expect_one(t0 + s.at_us, l, s.passed, s.remaining, s.reset_after_us,
                   s.retry_after_us);
    }
    // the entry at t0 was pruned by the commit at t0+10s; members are
    // "<time>:<entries in the window before it + 1>"
    EXPECT_EQ(zrange(kSl), (std::vector<std::string>{
                               str(t0 + kSecond) + ":2", str(t0 + kSecond),
                               str(t0 + 2 * kSecond) + ":3", str(t0 + 2 * kSecond),
                               str(t0 + 10 * kSecond) + ":3",
                               str(t0 + 10 * kSecond)}));
}

TEST_F(ScriptTest, SlidingLogMembersAreUniqueAtTheSameInstant) {
    const Limit l = sl(kSl, 3, 10000);
    expect_one(kT, l, 1, 2, 10 * kSecond, 0);
    expect_one(kT, l, 1, 1, 10 * kSecond, 0);
    expect_one(kT, l, 1, 0, 10 * kSecond, 0);
    expect_one(kT, l, 0, 0, 10 * kSecond, 10 * kSecond);
    EXPECT_EQ(zcard(kSl), 3);
    EXPECT_EQ(zrange(kSl),
              (std::vector<std::string>{str(kT) + ":1", str(kT), str(kT) + ":2",
                                        str(kT), str(kT) + ":3", str(kT)}));
}

TEST_F(ScriptTest, SlidingLogNeverHoldsMoreThanCapacity) {
    const Limit l = sl(kSl, 3, 10000);
    // one request a second for a minute: 3 pass in every 10 s
    for (std::int64_t i = 0; i < 60; i++) {
        SCOPED_TRACE("second " + str(i));
        Result r = run(kT + i * kSecond, {l});
        ASSERT_FALSE(r.error) << r.error_text;
        EXPECT_EQ(r.passed, (i % 10) < 3 ? 1 : 0);
        EXPECT_EQ(r.decode_rc, RRL_OK);
        EXPECT_LE(zcard(kSl), 3);
    }
    // then, once all of those have left, 3 passes and 100 rejected
    // requests within one window
    const std::int64_t t = kT + 100 * kSecond;
    expect_one(t, l, 1, 2, 10 * kSecond, 0);
    expect_one(t + 1, l, 1, 1, 10 * kSecond, 0);
    expect_one(t + 2, l, 1, 0, 10 * kSecond, 0);
    for (std::int64_t i = 0; i < 100; i++) {
        Result r = run(t + 3 + i * 1000, {l});
        ASSERT_FALSE(r.error) << r.error_text;
        ASSERT_EQ(r.passed, 0) << i;
        ASSERT_EQ(r.limits[0].retry_after_us, 10 * kSecond - 3 - i * 1000) << i;
    }
    EXPECT_EQ(zcard(kSl), 3);
}

TEST_F(ScriptTest, SlidingLogBurstAddsToCapacity) {
    const Limit l = sl(kSl, 3, 10000, /*burst=*/2);
    for (std::int64_t i = 0; i < 5; i++) {
        expect_one(kT + i * kSecond, l, 1, 4 - i, 10 * kSecond, 0);
    }
    // full; the oldest leaves at kT+10s
    expect_one(kT + 5 * kSecond, l, 0, 0, 9 * kSecond, 5 * kSecond);
    EXPECT_EQ(zcard(kSl), 5);
}

TEST_F(ScriptTest, SlidingLogCostOverRemainingConsumesNothing) {
    expect_one(kT, sl(kSl, 3, 10000, 0, 2), 1, 1, 10 * kSecond, 0);
    EXPECT_EQ(zcard(kSl), 2);
    const auto before = zrange(kSl);
    // cost 2 with 1 left: one of the two entries at kT must leave first
    expect_one(kT + kSecond, sl(kSl, 3, 10000, 0, 2), 0, 1, 9 * kSecond,
               9 * kSecond);
    EXPECT_EQ(zrange(kSl), before);
    expect_one(kT + kSecond, sl(kSl, 3, 10000, 0, 1), 1, 0, 10 * kSecond, 0);
    EXPECT_EQ(zcard(kSl), 3);
}

TEST_F(ScriptTest, SlidingLogRetryWaitsForEnoughEntriesToLeave) {
    // capacity 5: entries at 0,1,2,3,4 s; cost 3 needs 3 to leave -> 2 s one
    const Limit one = sl(kSl, 5, 10000);
    for (std::int64_t i = 0; i < 5; i++) {
        expect_one(kT + i * kSecond, one, 1, 4 - i, 10 * kSecond, 0);
    }
    expect_one(kT + 5 * kSecond, sl(kSl, 5, 10000, 0, 3), 0, 0, 9 * kSecond,
               7 * kSecond);
    expect_one(kT + 12 * kSecond - 1, sl(kSl, 5, 10000, 0, 3), 0, 2,
               2 * kSecond + 1, 1);
    expect_one(kT + 12 * kSecond, sl(kSl, 5, 10000, 0, 3), 1, 0, 10 * kSecond, 0);
    EXPECT_EQ(zcard(kSl), 5);
}

TEST_F(ScriptTest, SlidingLogCostOverCapacityAlwaysRejected) {
    expect_one(kT, sl(kSl, 3, 10000, 0, 4), 0, 3, 0, 10 * kSecond);
    EXPECT_EQ(dump(kSl), "(nil)");
    expect_one(kT, sl(kSl, 3, 10000, 0, 1), 1, 2, 10 * kSecond, 0);
    expect_one(kT + kSecond, sl(kSl, 3, 10000, 0, 4), 0, 2, 9 * kSecond,
               10 * kSecond);
    EXPECT_EQ(zcard(kSl), 1);
}

TEST_F(ScriptTest, SlidingLogTtlIsOnePeriod) {
    expect_one(kT, sl(kSl, 3, 10000), 1, 2, 10 * kSecond, 0);
    long long ttl = pttl(kSl);
    EXPECT_LE(ttl, 10000);
    EXPECT_GT(ttl, 9000);
}

TEST_F(ScriptTest, SlidingLogRejectionChangesNothing) {
    const Limit l = sl(kSl, 2, 10000);
    expect_one(kT, l, 1, 1, 10 * kSecond, 0);
    expect_one(kT + kSecond, l, 1, 0, 10 * kSecond, 0);
    // at kT+10.5s kT has left the window: passes, and its commit prunes kT
    expect_one(kT + 10500 * kMs, l, 1, 0, 10 * kSecond, 0);
    const std::string before = dump(kSl);
    const auto members = zrange(kSl);
    ASSERT_EQ(members.size(), 4u);  // 2 members with their scores
    const long long ttl_before = pttl(kSl);
    for (int i = 0; i < 10; i++) {
        Result r = run(kT + 10600 * kMs + i, {l});
        ASSERT_FALSE(r.error) << r.error_text;
        EXPECT_EQ(r.passed, 0);
    }
    EXPECT_EQ(dump(kSl), before);
    EXPECT_EQ(zrange(kSl), members);
    EXPECT_LE(pttl(kSl), ttl_before);
}

TEST_F(ScriptTest, SlidingLogRejectionKeepsStaleEntriesUntilACommit) {
    const Limit l = sl(kSl, 1, 1000);
    expect_one(kT, l, 1, 0, kSecond, 0);
    expect_one(kT + 500 * kMs, l, 0, 0, 500000, 500000);
    EXPECT_EQ(zcard(kSl), 1);
    expect_one(kT + kSecond, l, 1, 0, kSecond, 0);
    EXPECT_EQ(zrange(kSl), (std::vector<std::string>{str(kT + kSecond) + ":1",
                                                     str(kT + kSecond)}));
}

// --- several limits in one call -------------------------------------------

TEST_F(ScriptTest, OnlyLastLimitRejectsNothingConsumedAnywhere) {
    const std::string k1 = "rrl:{a:c}:fw", k2 = "rrl:{b:c}:sl",
                      k3 = "rrl:{c:c}:fw";
    // one earlier request through each, the third limit has capacity 1
    {
        Result r = run(kT, {fw(k1, 10, 1000), sl(k2, 10, 10000), fw(k3, 1, 1000)});
        ASSERT_FALSE(r.error) << r.error_text;
        ASSERT_EQ(r.passed, 1);
        EXPECT_EQ(r.decode_rc, RRL_OK);
    }
    EXPECT_EQ(get(k1), "1700000000:1");
    EXPECT_EQ(zcard(k2), 1);
    EXPECT_EQ(get(k3), "1700000000:1");
    const std::string d1 = dump(k1), d2 = dump(k2), d3 = dump(k3);

    Result r = run(kT + 100 * kMs,
                   {fw(k1, 10, 1000), sl(k2, 10, 10000), fw(k3, 1, 1000)});
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.raw, (std::vector<std::int64_t>{
                         0, kT + 100 * kMs,
                         1, 8, 900000, 0,          // would have passed
                         1, 8, 10 * kSecond, 0,    // would have passed
                         0, 0, 900000, 900000}));  // rejects
    ASSERT_EQ(r.decode_rc, RRL_OK);
    EXPECT_EQ(r.decision.passed, 0);
    EXPECT_EQ(r.decision.reported, 2u);
    EXPECT_EQ(r.decision.remaining, 0);
    EXPECT_EQ(r.decision.retry_after, 1);
    EXPECT_EQ(r.decision.reset_unix, 1700000001);

    EXPECT_EQ(dump(k1), d1);
    EXPECT_EQ(dump(k2), d2);
    EXPECT_EQ(dump(k3), d3);
    EXPECT_EQ(get(k1), "1700000000:1");
    EXPECT_EQ(zcard(k2), 1);
}

TEST_F(ScriptTest, AllLimitsPassAllCommitted) {
    const std::string k1 = "rrl:{a:c}:fw", k2 = "rrl:{b:c}:sl";
    Result r = run(kT + 250 * kMs, {fw(k1, 10, 1000, 0, 3), sl(k2, 4, 10000, 0, 3)});
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.raw, (std::vector<std::int64_t>{1, kT + 250 * kMs,
                                                1, 7, 750000, 0,
                                                1, 1, 10 * kSecond, 0}));
    ASSERT_EQ(r.decode_rc, RRL_OK);
    EXPECT_EQ(r.decision.reported, 1u);  // lowest remaining
    EXPECT_EQ(r.decision.remaining, 1);
    EXPECT_EQ(r.decision.reset_unix, 1700000011);  // .25 + 10 -> 11
    EXPECT_EQ(get(k1), "1700000000:3");
    EXPECT_EQ(zcard(k2), 3);
}

TEST_F(ScriptTest, AlgorithmsUseSeparateKeysWithoutInterference) {
    // the same client under both algorithms: tags keep the states apart
    expect_one(kT, fw(kFw, 1, 1000), 1, 0, kSecond, 0);
    expect_one(kT, sl(kSl, 1, 1000), 1, 0, kSecond, 0);
    EXPECT_EQ(redis_->status_or_string({"TYPE", kFw}), "string");
    EXPECT_EQ(redis_->status_or_string({"TYPE", kSl}), "zset");
}

// --- bad arguments --------------------------------------------------------

TEST_F(ScriptTest, ArgvCountMismatchIsAnError) {
    Reply r = evalsha({kFw}, {str(kT), "fixed_window", "5", "1000", "0"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len).find("redis_ratelimit: bad arguments"),
              std::string::npos) << r->str;
    EXPECT_EQ(rrl::error_kind(std::string_view(r->str, r->len)),
              RRL_REPLY_ERROR);

    r = evalsha({kFw}, {str(kT), "fixed_window", "5", "1000", "0", "1", "x"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len).find("bad arguments"), std::string::npos);

    r = evalsha({kFw, kSl}, {str(kT), "fixed_window", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len).find("bad arguments"), std::string::npos);
    EXPECT_EQ(dump(kFw), "(nil)");
}

TEST_F(ScriptTest, NonNumericTimeIsAnError) {
    Reply r = evalsha({kFw}, {"soon", "fixed_window", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len).find("bad arguments"), std::string::npos)
        << r->str;
    EXPECT_EQ(dump(kFw), "(nil)");
}

TEST_F(ScriptTest, UnknownAlgorithmIsAnError) {
    Reply r = evalsha({kFw}, {str(kT), "bogus_bucket", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len)
                  .find("redis_ratelimit: unknown algorithm bogus_bucket"),
              std::string::npos) << r->str;
    // an unknown second algorithm: the first limit is not committed either
    r = evalsha({kFw, kSl}, {str(kT), "fixed_window", "5", "1000", "0", "1",
                             "leaky", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(dump(kFw), "(nil)");
}

// --- real time ------------------------------------------------------------

TEST_F(ScriptTest, EmptyTimeArgumentUsesRedisTime) {
    const std::int64_t local_us =
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count();
    Result r = run(-1, {sl(kSl, 3, 10000)});
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.passed, 1);
    EXPECT_NEAR(static_cast<double>(r.now_us), static_cast<double>(local_us),
                5.0 * kSecond);
    EXPECT_EQ(r.decode_rc, RRL_OK);
    // the entry is stored at the time the script saw
    auto members = zrange(kSl);
    ASSERT_EQ(members.size(), 2u);
    EXPECT_EQ(members[0], str(r.now_us) + ":1");
    EXPECT_EQ(members[1], str(r.now_us));
}

// --- configuration changes ------------------------------------------------

// A zone's rate lowered (nginx reload) while a client's state holds more
// than the new capacity: the reply must still be one the decoder accepts.
TEST_F(ScriptTest, FixedWindowCapacityLoweredStillDecodes) {
    for (int i = 0; i < 5; i++) expect_one(kT + i, fw(kFw, 5, 1000), 1, 4 - i, kSecond - i, 0);
    Result r = run(kT + 10, {fw(kFw, 3, 1000)});
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.limits[0].remaining, 0);
    EXPECT_EQ(r.limits[0].retry_after_us, kSecond - 10);
    EXPECT_EQ(r.decode_rc, RRL_OK);
}

TEST_F(ScriptTest, SlidingLogCapacityLoweredStillDecodes) {
    for (int i = 0; i < 5; i++) {
        expect_one(kT + i * kSecond, sl(kSl, 5, 10000), 1, 4 - i, 10 * kSecond, 0);
    }
    Result r = run(kT + 5 * kSecond, {sl(kSl, 3, 10000)});
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.limits[0].remaining, 0);
    // 3 of the 5 entries must leave: the third oldest, at kT+2s
    EXPECT_EQ(r.limits[0].retry_after_us, 7 * kSecond);
    EXPECT_EQ(r.decode_rc, RRL_OK);
}

}  // namespace
