// Leases in the script: a zone with lease= (its algorithm named with
// "+lease") sends "C:W:B:T" as a limit's cost: the request's cost C, the
// units wanted W, B units of an ended lease given back, taken at Redis
// time T. The script gives B back, then grants G = min(W, available) when
// G >= max(C, 1), committing G (all or nothing with the other limits); the
// limit's reply has 2 more integers: G and the lease's life (us).
// token_bucket holds the units leased in a slot of 100 ms until the end of
// the next slot: no check lets the bucket refill above burst - held. Real
// script, real redis-server, injected time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "api/rrl.h"
#include "tests/script/script_lease_fixture.hpp"

namespace {

using namespace rrl_test;

class LeaseEveryAlgorithmTest : public LeaseTest,
                                public ::testing::WithParamInterface<int> {
   protected:
    int alg() const { return GetParam(); }
    Limit a() const {
        return ten_per_second(alg(), "rrl:{z:a}:" + alg_name(alg()));
    }
    Limit b() const {
        return ten_per_second(alg(), "rrl:{z:b}:" + alg_name(alg()));
    }

    // the lease's life at now for this algorithm (10 per 1 s)
    std::int64_t life_at(std::int64_t now) const {
        if (alg() == RRL_TOKEN_BUCKET) return kTokenLeaseUs;
        return 1000 * kMs - (now - kT) % (1000 * kMs);
    }

    // a's state is b's, b having had plain requests of what a leased
    // (token_bucket: the same tokens, then the units held)
    void expect_state_as_plain(const std::string& held) {
        if (alg() == RRL_TOKEN_BUCKET) {
            EXPECT_EQ(state(a().key), state(b().key) + held);
        } else {
            EXPECT_EQ(state(a().key), state(b().key));
        }
    }
};

std::string param_name(const ::testing::TestParamInfo<int>& info) {
    return alg_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LeaseEveryAlgorithmTest,
                         ::testing::Values(RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW,
                                           RRL_TOKEN_BUCKET),
                         param_name);

constexpr std::int64_t kNow = kT + 100 * kMs;  // token_bucket: slot + 1

// --- grants ----------------------------------------------------------------

TEST_P(LeaseEveryAlgorithmTest, GrantsTheUnitsWantedWhenAvailable) {
    const Row r = one(kNow, lease(a(), 1, 4));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 4);
    EXPECT_EQ(r.remaining, 6);
    EXPECT_EQ(r.retry_after_us, 0);
    EXPECT_EQ(r.life_us, life_at(kNow));
    // reset after: as a pass of 4 (token_bucket: 4 tokens refill in 400
    // ms, after the units held are free, 200 ms)
    const Row as_plain = one(kNow, plain(b(), 4));
    EXPECT_EQ(r.reset_after_us, as_plain.reset_after_us);
    EXPECT_EQ(r.reset_after_us, alg() == RRL_FIXED_WINDOW     ? 900 * kMs
                                : alg() == RRL_SLIDING_WINDOW ? 1900 * kMs
                                                              : 400 * kMs);
    // taken exactly as 4 requests would have been
    expect_state_as_plain(":" + str(kSlot + 1) + ":4:0");
}

TEST_P(LeaseEveryAlgorithmTest, GrantsWhatIsLeftWhenLessThanWanted) {
    for (const Limit& l : {a(), b()})
        ASSERT_EQ(one(kNow, plain(l, 7)).passed, 1);
    const Row r = one(kNow, lease(a(), 2, 5));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 3);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.life_us, life_at(kNow));
    ASSERT_EQ(one(kNow, plain(b(), 3)).passed, 1);
    expect_state_as_plain(":" + str(kSlot + 1) + ":3:0");
}

TEST_P(LeaseEveryAlgorithmTest, RefusedWhenLessThanTheCostCommitsNothing) {
    for (const Limit& l : {a(), b()})
        ASSERT_EQ(one(kNow, plain(l, 9)).passed, 1);
    const std::string before = state(a().key);
    const Row r = one(kNow, lease(a(), 2, 5));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.granted, 0);
    EXPECT_EQ(r.life_us, 0);
    // as a check of cost 2
    const Row as_plain = probe(b(), kNow, 2);
    EXPECT_EQ(as_plain.passed, 0);
    EXPECT_EQ(r.remaining, as_plain.remaining);
    EXPECT_EQ(r.remaining, 1);
    EXPECT_EQ(r.reset_after_us, as_plain.reset_after_us);
    EXPECT_EQ(r.retry_after_us, as_plain.retry_after_us);
    EXPECT_GT(r.retry_after_us, 0);
    EXPECT_EQ(state(a().key), before);
}

TEST_P(LeaseEveryAlgorithmTest, RenewalOfCostZeroNeedsOneUnit) {
    for (const Limit& l : {a(), b()})
        ASSERT_EQ(one(kNow, plain(l, 9)).passed, 1);
    Row r = one(kNow, lease(a(), 0, 5));
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.life_us, life_at(kNow));
    ASSERT_EQ(one(kNow, plain(b(), 1)).passed, 1);
    expect_state_as_plain(":" + str(kSlot + 1) + ":1:0");

    // none left: refused, as a check of cost 1
    const std::string before = state(a().key);
    r = one(kNow, lease(a(), 0, 5));
    const Row as_plain = probe(b(), kNow, 1);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.granted, 0);
    EXPECT_EQ(r.life_us, 0);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.retry_after_us, as_plain.retry_after_us);
    EXPECT_EQ(r.reset_after_us, as_plain.reset_after_us);
    EXPECT_EQ(state(a().key), before);
}

TEST_P(LeaseEveryAlgorithmTest, TheLeasesLife) {
    for (std::int64_t at :
         {std::int64_t{0}, 300 * kMs, 999 * kMs, std::int64_t{1999999}}) {
        SCOPED_TRACE("at +" + str(at));
        redis_->command({"FLUSHALL"});
        const Row r = one(kT + at, lease(a(), 1, 2));
        EXPECT_EQ(r.granted, 2);
        EXPECT_EQ(r.life_us, life_at(kT + at));
        EXPECT_EQ(r.life_us, alg() == RRL_TOKEN_BUCKET ? kTokenLeaseUs
                             : at == 1999999           ? 1
                                                       : 1000 * kMs - at);
    }
}

// --- all or nothing ----------------------------------------------------------

TEST_P(LeaseEveryAlgorithmTest, AnotherLimitRefusesNothingIsLeased) {
    const Limit other = fw("rrl:{z:a}:other", 1, 1000);
    ASSERT_EQ(one(kNow, plain(other)).passed, 1);
    const std::string other_before = state(other.key);
    const Call c = call(kNow, {lease(a(), 1, 4), plain(other)});
    ASSERT_FALSE(c.error) << c.error_text;
    EXPECT_EQ(c.passed, 0);
    // the lease limit passed on its own (its G reported, not taken) ...
    EXPECT_EQ(c.limits[0].passed, 1);
    EXPECT_EQ(c.limits[0].granted, 4);
    EXPECT_EQ(c.limits[1].passed, 0);
    // ... and nothing was committed anywhere
    EXPECT_EQ(state(a().key), "");
    EXPECT_EQ(state(other.key), other_before);
}

TEST_P(LeaseEveryAlgorithmTest, TheLeaseRefusesNothingIsCommitted) {
    const Limit other = fw("rrl:{z:a}:other", 5, 1000);
    ASSERT_EQ(one(kNow, plain(a(), 10)).passed, 1);
    const std::string before = state(a().key);
    const Call c = call(kNow, {plain(other), lease(a(), 1, 4)});
    ASSERT_FALSE(c.error) << c.error_text;
    EXPECT_EQ(c.passed, 0);
    EXPECT_EQ(c.limits[0].passed, 1);
    EXPECT_EQ(c.limits[1].passed, 0);
    EXPECT_EQ(c.limits[1].granted, 0);
    EXPECT_EQ(state(other.key), "");
    EXPECT_EQ(state(a().key), before);
    // both pass: both commit, the lease its G
    const Call ok = call(kNow, {plain(other), lease(b(), 1, 4)});
    EXPECT_EQ(ok.passed, 1);
    EXPECT_EQ(ok.limits[1].granted, 4);
    EXPECT_EQ(state(other.key), "1700000000:1");
    EXPECT_EQ(probe(b(), kNow).remaining, 5);
}

// --- the release form -------------------------------------------------------

TEST_P(LeaseEveryAlgorithmTest, ReleaseGivesBackTheCostOnly) {
    for (const Limit& l : {a(), b()})
        ASSERT_EQ(one(kNow, plain(l, 3)).passed, 1);
    ASSERT_EQ(one(kNow, plain(b(), 3)).passed, 1);  // 2 + 1 of a's 5 stay
    const Row r = one(kNow, lease(a(), 2, 5));
    ASSERT_EQ(r.granted, 5);
    Reply rel = release_of(kNow, kNow, {lease(a(), 2, 5, 9, kNow)});
    ASSERT_EQ(rel->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(rel->integer, 1);
    expect_state_as_plain(":" + str(kSlot + 1) + ":5:0");
    EXPECT_EQ(probe(a(), kNow).remaining, 3);

    // a renewal's reservation took no cost: nothing to give back
    const std::string before = state(a().key);
    rel = release_of(kNow, kNow, {lease(a(), 0, 5)});
    ASSERT_EQ(rel->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(rel->integer, 0);
    EXPECT_EQ(state(a().key), before);
}

// --- the batch form ---------------------------------------------------------

// Lease rows in a batch decide as their own calls would; a failing
// request's row is -1 over its full width (6 for a lease limit).
TEST_P(LeaseEveryAlgorithmTest, BatchAsOneByOne) {
    const Limit pa = fw("rrl:{z:a}:plain", 3, 1000);
    const Limit pb = fw("rrl:{z:b}:plain", 3, 1000);
    const Limit wrong = ten_per_second(alg(), "rrl:{z:a}:list");
    ASSERT_EQ(redis_->integer({"RPUSH", wrong.key, "x"}), 1);
    auto requests = [&](const Limit& l, const Limit& p) {
        return std::vector<std::vector<Arg>>{
            {lease(l, 1, 4)},
            {plain(p), lease(l, 0, 3)},
            {lease(l, 2, 9)},               // 3 left
            {lease(l, 1, 1), plain(p, 3)},  // p refuses
            {lease(l, 1, 5, 2, kNow)}};
    };
    const auto as_batch = requests(a(), pa);
    auto with_failing = as_batch;
    with_failing.insert(with_failing.begin() + 2,
                        {lease(wrong, 1, 2), plain(pa)});
    const std::vector<std::int64_t> got =
        integers(batch_raw(kNow, with_failing));

    std::vector<std::int64_t> expected;
    for (const auto& req : requests(b(), pb)) {
        std::vector<std::string> keys, argv = {str(kNow)};
        for (const Arg& x : req) {
            keys.push_back(x.limit.key);
            const auto v = args_of(x);
            argv.insert(argv.end(), v.begin(), v.end());
        }
        const auto v = integers(evalsha_of(persisting_sha_, keys, argv));
        expected.insert(expected.end(), v.begin(), v.end());
    }
    // the failing request's row, third: -1 but for now
    std::vector<std::int64_t> failing(2 + 6 + 4, -1);
    failing[1] = kNow;
    const std::size_t at = 2 + 6 + (2 + 4 + 6);
    expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(at),
                    failing.begin(), failing.end());
    EXPECT_EQ(got, expected);
    expect_state_as_plain("");
    EXPECT_EQ(state(pa.key), state(pb.key));
}

// --- bad fields -------------------------------------------------------------

TEST_P(LeaseEveryAlgorithmTest, BadFieldsChangeNothing) {
    ASSERT_EQ(one(kNow, lease(a(), 1, 5)).granted, 5);
    const std::string before = dump(a().key);
    const Limit other = ten_per_second(alg(), "rrl:{z:a}:other");
    for (const char* field : {"1:0:0:0",
                              "2:1:0:0",
                              "0:0:0:0",
                              "a:1:0:0",
                              "1:b:0:0",
                              "1:2:c:0",
                              "1:2:0:d",
                              "1:2:0",
                              "1:2:0:0:0",
                              "-1:2:0:0",
                              "1:-2:0:0",
                              "1.5:2:0:0",
                              "1:2.0:0:0",
                              "",
                              "1",
                              " 1:2:0:0",
                              "1:2:0:0 ",
                              "1e1:20:0:0",
                              "1:99999999999999999999:0:0",
                              "1:2:0x10:0"}) {
        SCOPED_TRACE("field \"" + std::string(field) + "\"");
        // a limit before it would give 3 back and take units
        const std::vector<Arg> limits = {lease(a(), 1, 2, 3, kNow),
                                         lease_field(other, field)};
        Call c = call(kNow, limits);
        EXPECT_TRUE(c.error);
        EXPECT_EQ(c.error_text, "ERR redis_ratelimit: bad arguments");
        Reply r = batch_raw(kNow, {{lease(a(), 1, 2, 3, kNow)}, {limits[1]}});
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_EQ(std::string(r->str, r->len),
                  "ERR redis_ratelimit: bad arguments");
        r = release_of(kNow, kNow, limits);
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_EQ(std::string(r->str, r->len),
                  "ERR redis_ratelimit: bad arguments");
        EXPECT_EQ(dump(a().key), before);
        EXPECT_EQ(state(other.key), "");
    }
}

TEST_F(LeaseTest, OnlyTheAlgorithmsThatLease) {
    for (int algorithm : {RRL_SLIDING_LOG, RRL_LEAKY_BUCKET}) {
        const Limit l = make_limit(algorithm, "rrl:{z:a}:x", 10, 1000);
        const Call c = call(kNow, {lease(l, 1, 2)});
        EXPECT_TRUE(c.error);
        EXPECT_EQ(c.error_text, "ERR redis_ratelimit: unknown algorithm " +
                                    l.algorithm + kLeaseSuffix);
    }
    Limit both = fw("rrl:{z:a}:x", 10, 1000);
    both.algorithm += "+overrides";
    EXPECT_TRUE(call(kNow, {lease(both, 1, 2)}).error);
    Limit none = fw("rrl:{z:a}:x", 10, 1000);
    none.algorithm = "";
    EXPECT_TRUE(call(kNow, {lease(none, 1, 2)}).error);
    EXPECT_EQ(state("rrl:{z:a}:x"), "");
}

// --- giveback ---------------------------------------------------------------

// fixed_window: only while the lease's window is current; given back
// whatever the request gets.
TEST_F(LeaseTest, FixedWindowGivesBackInItsWindowOnly) {
    const Limit l = ten_per_second(RRL_FIXED_WINDOW, "rrl:{z:a}:fw");
    const std::int64_t taken = kT + 100 * kMs;
    ASSERT_EQ(one(taken, lease(l, 1, 5)).granted, 5);
    Row r = one(kT + 300 * kMs, lease(l, 0, 1, 3, taken));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(r.remaining, 7);
    EXPECT_EQ(state(l.key), "1700000000:3");
    // refused after the giveback: still given back
    ASSERT_EQ(one(kT + 300 * kMs, lease(l, 1, 6)).granted, 6);  // 9
    r = one(kT + 400 * kMs, lease(l, 5, 5, 2, taken));          // 7: 3 left
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 3);
    EXPECT_EQ(state(l.key), "1700000000:7");
    // the next window: a lease of the one before gives nothing back
    ASSERT_EQ(one(kT + 1050 * kMs, plain(l, 2)).passed, 1);
    r = one(kT + 1100 * kMs, lease(l, 1, 1, 2, taken));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000001:3");
}

// sliding_window: from the current count, or from the previous one once
// the state has moved on to the next window.
TEST_F(LeaseTest, SlidingWindowGivesBackFromCurrentOrPrevious) {
    const Limit l = ten_per_second(RRL_SLIDING_WINDOW, "rrl:{z:a}:sw");
    const std::int64_t taken = kT + 100 * kMs;
    ASSERT_EQ(one(taken, lease(l, 1, 5)).granted, 5);
    Row r = one(kT + 500 * kMs, lease(l, 0, 1, 3, taken));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000000:3:0");
    // the state moves on: 3 weigh as the previous window's
    ASSERT_EQ(one(kT + 1050 * kMs, plain(l)).passed, 1);
    EXPECT_EQ(state(l.key), "1700000001:1:3");
    r = one(kT + 1100 * kMs, lease(l, 0, 1, 2, kT + 500 * kMs));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000001:2:1");
    // the window after the lease's, the state not moved on yet: from the
    // count that weighs as the previous one now
    r = one(kT + 2100 * kMs, lease(l, 0, 1, 1, kT + 1100 * kMs));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000002:1:1");
    // two windows on: nothing weighs, nothing to give back
    r = one(kT + 3100 * kMs, lease(l, 0, 1, 1, kT + 1100 * kMs));
    EXPECT_EQ(r.granted, 1);
    EXPECT_EQ(state(l.key), "1700000003:1:1");
}

// token_bucket: tokens = min(burst - held, tokens + B), whenever taken.
TEST_F(LeaseTest, TokenBucketGivesBackUpToBurstLessHeld) {
    const Limit l = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb");
    // 4 leased at kT: 6 tokens, 4 held until the end of slot + 1
    ASSERT_EQ(one(kT, lease(l, 1, 4)).granted, 4);
    EXPECT_EQ(state(l.key), "6:1700000000000000:" + str(kSlot) + ":4:0");
    // at 150 ms, 3 back: 6 + 1.5 refilled + 3, but 4 still held: 6
    Row r = one(kT + 150 * kMs, lease(l, 0, 10, 3, kT));
    EXPECT_EQ(r.granted, 6);
    EXPECT_EQ(state(l.key), "0:1700000000150000:" + str(kSlot + 1) + ":6:4");

    // refused after a giveback under held units: the tokens stay capped
    // once the units are held no more (6 + 0.5 refilled, not 9 + 0.5)
    const Limit k = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb4");
    ASSERT_EQ(one(kT, lease(k, 1, 4)).granted, 4);
    r = one(kT + 150 * kMs, lease(k, 8, 8, 3, kT));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 6);
    EXPECT_EQ(state(k.key), "6:1700000000150000:" + str(kSlot + 1) + ":0:4");
    EXPECT_EQ(probe(k, kT + 200 * kMs).remaining, 5);

    // once nothing is held: up to the burst
    const Limit m = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb2");
    ASSERT_EQ(one(kT, lease(m, 1, 4)).granted, 4);
    r = one(kT + 250 * kMs, lease(m, 0, 10, 3, kT));
    EXPECT_EQ(r.granted, 10);

    // refused after the giveback: still given back (2.5 + 5)
    const Limit n = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb3");
    ASSERT_EQ(one(kT, lease(n, 1, 10)).granted, 10);
    r = one(kT + 250 * kMs, lease(n, 8, 8, 5, kT));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 7);
    EXPECT_EQ(state(n.key), "7.5:1700000000250000");
}

// --- token_bucket's held units ----------------------------------------------

// With a lease of 4 held, the bucket never refills above burst - 4, lease
// or not, until the slot after the lease's has passed.
TEST_F(LeaseTest, TokenBucketNeverRefillsAboveBurstLessHeld) {
    const Limit l = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb");
    const std::int64_t taken = kT + 20 * kMs;
    ASSERT_EQ(one(taken, lease(l, 0, 4)).granted, 4);  // 6 left
    for (std::int64_t t = taken; t < kT + 200 * kMs; t += 10 * kMs) {
        SCOPED_TRACE("at +" + str(t - kT));
        EXPECT_EQ(probe(l, t).remaining, 5);  // 6 - 1, though 7.7 refilled
    }
    EXPECT_EQ(probe(l, kT + 199999).remaining, 5);
    // then it does: 6 + 1.8 refilled
    EXPECT_EQ(probe(l, kT + 200 * kMs).remaining, 6);
    EXPECT_EQ(probe(l, kT + 400 * kMs).remaining, 8);
    EXPECT_EQ(probe(l, kT + 500 * kMs).remaining, 9);

    // all leased: refused until the slot after has passed
    const Limit m = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb2");
    Row r = one(kT, lease(m, 1, 10));
    ASSERT_EQ(r.granted, 10);
    EXPECT_EQ(r.reset_after_us, 1000 * kMs);
    r = probe(m, kT + 150 * kMs);  // 1.5 refilled, none usable
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.retry_after_us, 50 * kMs);
    r = probe(m, kT + 150 * kMs, 3);  // 3 refill by 300 ms
    EXPECT_EQ(r.retry_after_us, 150 * kMs);
    r = one(kT + 150 * kMs, lease(m, 0, 10));
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.retry_after_us, 50 * kMs);
    r = probe(m, kT + 200 * kMs);
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.remaining, 1);
}

// A zone without lease= reads a state a lease zone wrote (after a reload):
// the tokens capped by the units held, which its commits keep (rolled to
// its slot) while they are held.
TEST_F(LeaseTest, TokenBucketWithoutLeaseReadsTheHeldState) {
    const Limit l = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb");
    set(l.key, "6:1700000000000000:" + str(kSlot) + ":4:0");
    Row r = one(kT + 50 * kMs, plain(l));  // 6.5, capped at 6
    EXPECT_EQ(r.remaining, 5);
    EXPECT_EQ(state(l.key), "5:1700000000050000:" + str(kSlot) + ":4:0");
    r = one(kT + 150 * kMs, plain(l));  // 6, capped at 6
    EXPECT_EQ(r.remaining, 5);
    EXPECT_EQ(state(l.key), "5:1700000000150000:" + str(kSlot + 1) + ":0:4");
    r = one(kT + 250 * kMs, plain(l));  // 6, nothing held
    EXPECT_EQ(r.remaining, 5);
    EXPECT_EQ(state(l.key), "5:1700000000250000");

    // a state that is not the script's: as none (a full bucket)
    set(l.key, "6:1700000000000000:x:4:0");
    EXPECT_EQ(one(kT + 250 * kMs, plain(l)).remaining, 9);
}

// The release form of a zone without lease= keeps the held fields, and a
// check still caps what it gave back.
TEST_F(LeaseTest, TokenBucketReleaseKeepsTheHeldFields) {
    const Limit l = ten_per_second(RRL_TOKEN_BUCKET, "rrl:{z:a}:tb");
    ASSERT_EQ(one(kT, lease(l, 1, 4)).granted, 4);
    ASSERT_EQ(one(kT + 50 * kMs, plain(l, 2)).passed, 1);  // 6 -> 4
    Reply rel = release_of(kT + 50 * kMs, kT + 60 * kMs, {plain(l, 2)});
    ASSERT_EQ(rel->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(rel->integer, 1);
    EXPECT_EQ(state(l.key), "6:1700000000050000:" + str(kSlot) + ":4:0");
    EXPECT_EQ(probe(l, kT + 60 * kMs).remaining, 5);  // 6.1, capped at 6
    // held no more: a full bucket's state goes
    ASSERT_EQ(one(kT + 500 * kMs, plain(l)).passed, 1);  // 10 -> 9
    rel = release_of(kT + 500 * kMs, kT + 500 * kMs, {plain(l)});
    ASSERT_EQ(rel->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(rel->integer, 1);
    EXPECT_EQ(state(l.key), "");
}

}  // namespace
