// The deny cache's arithmetic (rrl_deny_learn, deny_applies()): an entry
// ends no later than Redis's own end of the rejection, applies only to the
// same zone and Redis and to costs at least the learned one, and answers
// with the values Redis would send. Then against the real script, on a
// real redis-server with injected time: for every rejection of long
// request sequences, each algorithm, the script still rejects at the
// entry's last microsecond, at every cost the entry applies to.
#include "local/deny_entry.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "script/script_reply.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

constexpr std::int64_t kSent = 5000 * kSecond;  // a monotonic clock's time

rrl_deny_limit_t deny_limit(int algorithm, std::uint64_t limit,
                            std::uint64_t period_ms, std::uint64_t burst,
                            std::uint64_t cost, std::uint32_t redis = 7) {
    rrl_deny_limit_t l{};
    l.algorithm = algorithm;
    l.limit = limit;
    l.period_ms = period_ms;
    l.burst = rrl::effective_burst(*rrl::algorithm(algorithm), limit, burst);
    l.redis = redis;
    l.cost = cost;
    return l;
}

// 5r/s fixed_window, as the entries below learn it
rrl_deny_limit_t fw5(std::uint64_t cost = 1) {
    return deny_limit(RRL_FIXED_WINDOW, 5, 1000, 0, cost);
}

rrl_limit_result_t rejected(std::int64_t remaining, std::int64_t reset_us,
                            std::int64_t retry_us) {
    return {0, remaining, reset_us, retry_us};
}

// An entry of fw5(cost) learned from a call sent at kSent whose reply came
// 300 us later.
rrl_deny_entry_t learned(std::int64_t retry_us, std::uint64_t cost = 1) {
    rrl_deny_limit_t l = fw5(cost);
    rrl_limit_result_t r = rejected(0, 800 * kMs, retry_us);
    rrl_deny_entry_t e{};
    EXPECT_EQ(rrl_deny_learn(kSent, kSent + 300, &l, &r, &e), 1);
    return e;
}

TEST(DenyLearn, EndsTheWaitAfterTheSend) {
    // Redis's time T is at or after the send: its end is at or after this
    rrl_deny_entry_t e = learned(500 * kMs);
    EXPECT_EQ(e.until_us, kSent + 500 * kMs);
    // and at or before the reply's arrival: what it announces ends after
    EXPECT_EQ(e.retry_until_us, kSent + 300 + 500 * kMs);
    EXPECT_EQ(e.reset_until_us, kSent + 800 * kMs);
    EXPECT_EQ(e.remaining, 0);
    EXPECT_EQ(e.limit.cost, 1u);
    EXPECT_EQ(e.limit.algorithm, RRL_FIXED_WINDOW);
    EXPECT_EQ(e.limit.redis, 7u);
}

TEST(DenyLearn, AnyWait) {
    for (std::int64_t retry :
         {1LL, 2LL, 999LL, 1000LL, 1001LL, 123456LL, 1000000LL,
          86400LL * kSecond, 100LL * 365 * 86400 * kSecond}) {
        rrl_deny_limit_t l = fw5();
        rrl_limit_result_t r = rejected(0, 0, retry);
        rrl_deny_entry_t e{};
        ASSERT_EQ(rrl_deny_learn(kSent, kSent, &l, &r, &e), 1) << retry;
        EXPECT_EQ(e.until_us, kSent + retry) << retry;
    }
}

TEST(DenyLearn, OnlyRejectionsThatEndLater) {
    rrl_deny_limit_t l = fw5();
    rrl_deny_entry_t e{};

    rrl_limit_result_t passed = {1, 3, 800 * kMs, 0};
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &l, &passed, &e), 0) << "a pass";

    rrl_limit_result_t r = rejected(0, 0, 500 * kMs);
    std::int64_t until = kSent + 500 * kMs;
    EXPECT_EQ(rrl_deny_learn(kSent, until - 1, &l, &r, &e), 1)
        << "the reply came 1 us before the end";
    EXPECT_EQ(rrl_deny_learn(kSent, until, &l, &r, &e), 0)
        << "the reply came at the end";
    EXPECT_EQ(rrl_deny_learn(kSent, until + kSecond, &l, &r, &e), 0)
        << "the reply came after the end";
}

TEST(DenyLearn, NotACostOverTheCapacity) {
    // Redis answers such a cost with a full period whatever the state
    rrl_limit_result_t r = rejected(5, 0, kSecond);
    rrl_deny_entry_t e{};
    rrl_deny_limit_t over = fw5(6);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &over, &r, &e), 0);
    rrl_deny_limit_t at = fw5(5);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &at, &r, &e), 1);

    // the capacity is the algorithm's: B for token_bucket, B + 1 for
    // leaky_bucket
    rrl_deny_limit_t tb = deny_limit(RRL_TOKEN_BUCKET, 5, 1000, 2, 3);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &tb, &r, &e), 0);
    rrl_deny_limit_t lb = deny_limit(RRL_LEAKY_BUCKET, 5, 1000, 2, 3);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &lb, &r, &e), 1);
}

TEST(DenyLearn, NotAMalformedResult) {
    rrl_deny_limit_t l = fw5();
    rrl_deny_entry_t e{};
    rrl_limit_result_t negative = rejected(-1, 0, kSecond);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &l, &negative, &e), 0);
    rrl_limit_result_t bad_reset = rejected(0, -1, kSecond);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &l, &bad_reset, &e), 0);
    rrl_limit_result_t huge =
        rejected(0, 0, static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000 + 1);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &l, &huge, &e), 0);
    rrl_deny_limit_t unknown = fw5();
    unknown.algorithm = RRL_ALGORITHM_COUNT;
    rrl_limit_result_t r = rejected(0, 0, kSecond);
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &unknown, &r, &e), 0);
}

TEST(DenyApplies, UntilTheEndExclusive) {
    rrl_deny_entry_t e = learned(500 * kMs);
    rrl_deny_limit_t l = fw5();
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 1);
    EXPECT_EQ(rrl::deny_applies(e, l, e.until_us - 1, v), 1);
    EXPECT_EQ(v[3], 301) << "1 us left, and the 300 us the reply took";
    EXPECT_EQ(rrl::deny_applies(e, l, e.until_us, v), 0);
    EXPECT_EQ(rrl::deny_applies(e, l, e.until_us + kSecond, v), 0);
}

TEST(DenyApplies, TheValuesRedisWouldSend) {
    rrl_deny_entry_t e = learned(500 * kMs);
    e.remaining = 2;
    rrl_deny_limit_t l = fw5();
    std::int64_t v[RRL_REPLY_PER_LIMIT] = {-1, -1, -1, -1};

    std::int64_t now = kSent + 100 * kMs;
    ASSERT_EQ(rrl::deny_applies(e, l, now, v), 1);
    EXPECT_EQ(v[0], 0) << "passed";
    EXPECT_EQ(v[1], 2) << "remaining";
    EXPECT_EQ(v[2], 700 * kMs) << "reset after";
    EXPECT_EQ(v[3], 400 * kMs + 300) << "retry after";

    // a reset that came before the end (fixed_window on an empty count
    // rejecting a cost over the capacity): 0, never negative
    e.reset_until_us = kSent + 50 * kMs;
    ASSERT_EQ(rrl::deny_applies(e, l, now, v), 1);
    EXPECT_EQ(v[2], 0);
}

TEST(DenyApplies, RetryAfterNeverEarlierThanRedis) {
    // Redis decided at some T between the send and the reply's arrival (a
    // one-way delay after the send, unknown): its end is T + retry. The
    // entry stops rejecting at the earliest end, but the wait it announces
    // runs to the latest, so a client that waits it out (through any
    // server, however close to Redis) is not rejected again.
    for (std::int64_t delay : {0LL, 1LL, 300LL, 1500LL * kMs}) {
        for (std::int64_t retry : {999LL * kMs, 1000LL * kMs, 1000LL * kMs + 1,
                                   2500LL * kMs, 60LL * kSecond}) {
            rrl_deny_limit_t l = fw5();
            rrl_limit_result_t r = rejected(0, retry, retry);
            rrl_deny_entry_t e{};
            std::int64_t replied = kSent + 2 * delay;
            if (replied >= kSent + retry) {
                EXPECT_EQ(rrl_deny_learn(kSent, replied, &l, &r, &e), 0);
                continue;
            }
            ASSERT_EQ(rrl_deny_learn(kSent, replied, &l, &r, &e), 1);
            EXPECT_EQ(e.until_us, kSent + retry) << "the earliest end";
            EXPECT_EQ(e.retry_until_us, replied + retry) << "the latest end";
            for (std::int64_t now = replied; now < e.until_us;
                 now += retry / 97 + 1) {
                std::int64_t v[RRL_REPLY_PER_LIMIT];
                ASSERT_EQ(rrl::deny_applies(e, l, now, v), 1);
                for (std::int64_t redis_at : {kSent, kSent + delay, replied}) {
                    std::int64_t redis_left = redis_at + retry - now;
                    EXPECT_GE(v[3], redis_left)
                        << "delay " << delay << " retry " << retry << " at +"
                        << now - kSent;
                    EXPECT_GE(rrl::retry_after_seconds(v[3]) * kSecond,
                              redis_left);
                }
                // and no longer than the round trip allows
                EXPECT_LE(v[3], kSent + retry - now + 2 * delay);
            }
        }
    }
}

TEST(DenyApplies, ResetAsBefore) {
    // X-RateLimit-Reset is not a promise to wait on: from the send, as
    // Redis's own (a fixed window's end stays on its whole second)
    rrl_deny_limit_t l = fw5();
    rrl_limit_result_t r = rejected(0, 800 * kMs, 500 * kMs);
    rrl_deny_entry_t e{};
    ASSERT_EQ(rrl_deny_learn(kSent, kSent + 40 * kMs, &l, &r, &e), 1);
    EXPECT_EQ(e.reset_until_us, kSent + 800 * kMs);

    std::int64_t v[RRL_REPLY_PER_LIMIT];
    ASSERT_EQ(rrl::deny_applies(e, l, kSent + 100 * kMs, v), 1);
    EXPECT_EQ(v[2], 700 * kMs);
    EXPECT_EQ(v[3], 440 * kMs);
}

TEST(DenyApplies, FixedWindowCostsAtLeastTheLearnedOneUpToTheCapacity) {
    rrl_deny_entry_t e = learned(500 * kMs, 3);
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    for (std::uint64_t cost = 1; cost <= 7; cost++) {
        rrl_deny_limit_t l = fw5(cost);
        // below 3, a request may pass before the end; over 5 (the
        // capacity), Redis sends a full period; in between, the window's
        // end is every cost's
        EXPECT_EQ(rrl::deny_applies(e, l, kSent, v),
                  cost >= 3 && cost <= 5 ? 1 : 0)
            << "cost " << cost;
    }
}

TEST(DenyApplies, OtherAlgorithmsTheLearnedCostOnly) {
    // a larger cost waits longer than the learned one: the entry's wait
    // would be too short a Retry-After for it, so Redis answers it
    for (int algorithm : {RRL_SLIDING_LOG, RRL_SLIDING_WINDOW,
                          RRL_TOKEN_BUCKET, RRL_LEAKY_BUCKET}) {
        rrl_deny_limit_t learned_limit = deny_limit(algorithm, 5, 1000, 4, 2);
        rrl_limit_result_t r = rejected(0, 800 * kMs, 500 * kMs);
        rrl_deny_entry_t e{};
        ASSERT_EQ(rrl_deny_learn(kSent, kSent, &learned_limit, &r, &e), 1);
        std::int64_t v[RRL_REPLY_PER_LIMIT];
        for (std::uint64_t cost = 1; cost <= 4; cost++) {
            rrl_deny_limit_t l = deny_limit(algorithm, 5, 1000, 4, cost);
            EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), cost == 2 ? 1 : 0)
                << rrl::algorithm(algorithm)->name.data() << " cost " << cost;
        }
    }
}

TEST(DenyApplies, NotToAnotherZoneOrRedis) {
    rrl_deny_entry_t e = learned(500 * kMs);
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    rrl_deny_limit_t same = fw5();
    EXPECT_EQ(rrl::deny_applies(e, same, kSent, v), 1);

    rrl_deny_limit_t l = fw5();
    l.algorithm = RRL_SLIDING_WINDOW;
    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 0) << "algorithm";

    l = fw5();
    l.limit = 6;
    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 0) << "limit";

    l = fw5();
    l.period_ms = 2000;
    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 0) << "period";

    l = fw5();
    l.burst = 1;
    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 0) << "burst";

    l = fw5();
    l.redis = 8;
    EXPECT_EQ(rrl::deny_applies(e, l, kSent, v), 0) << "redis";
}

TEST(DenyApplies, DecodedAsARejectionByTheCachedLimit) {
    // the shim's reply: the cached limit rejects, another limit was not
    // consulted (shown as an idle key); decoded as Redis's would be
    rrl_deny_entry_t e = learned(1500 * kMs);
    rrl_deny_limit_t l = fw5();
    std::int64_t now = kSent + 200 * kMs;
    std::vector<std::int64_t> reply = {
        0, 1700000000LL * kSecond, 1, 10, 0, 0, 0, 0, 0, 0};
    ASSERT_EQ(rrl::deny_applies(e, l, now, &reply[6]), 1);

    rrl_limit_result_t limits[2];
    rrl_decision_t d{};
    ASSERT_EQ(rrl_test::reply_decode(reply.data(), reply.size(), 2, limits, &d),
              RRL_OK);
    EXPECT_EQ(d.passed, 0);
    EXPECT_EQ(d.reported, 1u);
    EXPECT_EQ(d.remaining, 0);
    EXPECT_EQ(d.retry_after, 2) << "1.3 s, rounded up";
    EXPECT_EQ(d.reset_unix, 1700000001) << "600 ms on, rounded up";
}

// ==========================================================================
// Against the real script
// ==========================================================================

class DenyVersusScriptTest : public ScriptFixture {
   protected:
    // Requests at irregular times and costs; at each rejection, the entry
    // learned as if the call had been sent at Redis's very instant (the
    // tightest case) must be one the script agrees with: at the entry's
    // last microsecond, and at a random instant of it, the script rejects
    // every cost the entry applies to, with the same retry as the
    // entry's.
    void check(int algorithm, std::int64_t limit, std::int64_t period_ms,
               std::uint64_t burst, std::uint64_t seed) {
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        Limit base =
            make_limit(algorithm, "rrl:{d:1}:x", limit, period_ms, burst);
        const auto capacity =
            static_cast<std::uint64_t>(capacity_of(algorithm, base));
        Sequence seq(seed);
        std::int64_t now = kT + 123457;
        std::int64_t period_us = period_ms * kMs;
        std::int64_t interval = period_us / limit;
        int learned = 0;

        for (int i = 0; i < 300; i++) {
            switch (seq.next(4)) {
                case 0:
                    break;
                case 1:
                    now += static_cast<std::int64_t>(seq.next(1000));
                    break;
                case 2:
                    now += static_cast<std::int64_t>(
                        seq.next(static_cast<std::uint64_t>(interval) + 1));
                    break;
                default:
                    now += static_cast<std::int64_t>(
                        seq.next(static_cast<std::uint64_t>(period_us) + 1));
                    break;
            }
            Limit l = with_cost(
                base, static_cast<std::int64_t>(1 + seq.next(capacity)));
            SCOPED_TRACE("step " + str(i) + " at +" + str(now - kT) + " cost " +
                         str(l.cost));

            Result r = run(now, {l}, true);
            ASSERT_FALSE(r.error) << r.error_text;
            ASSERT_EQ(r.limits.size(), 1u);
            if (r.passed) continue;

            rrl_deny_limit_t dl{};
            dl.algorithm = algorithm;
            dl.limit = static_cast<std::uint64_t>(l.limit);
            dl.period_ms = static_cast<std::uint64_t>(l.period_ms);
            dl.burst = static_cast<std::uint64_t>(l.burst);
            dl.cost = static_cast<std::uint64_t>(l.cost);
            rrl_limit_result_t result = {
                static_cast<int>(r.limits[0].passed), r.limits[0].remaining,
                r.limits[0].reset_after_us, r.limits[0].retry_after_us};
            rrl_deny_entry_t e{};
            if (!rrl_deny_learn(now, now, &dl, &result, &e)) continue;
            learned++;

            std::int64_t span = e.until_us - now;
            for (std::int64_t at :
                 {e.until_us - 1,
                  now + static_cast<std::int64_t>(
                            seq.next(static_cast<std::uint64_t>(span)))}) {
                std::uint64_t last =
                    algorithm == RRL_FIXED_WINDOW ? capacity : dl.cost;
                for (std::uint64_t cost = dl.cost; cost <= last; cost++) {
                    rrl_deny_limit_t probe = dl;
                    probe.cost = cost;
                    std::int64_t v[RRL_REPLY_PER_LIMIT];
                    ASSERT_EQ(rrl::deny_applies(e, probe, at, v), 1);
                    LimitResult s = run_one(
                        at, with_cost(l, static_cast<std::int64_t>(cost)));
                    ASSERT_EQ(s.passed, 0)
                        << "the script passes cost " << cost << " at +"
                        << at - now << " us of a rejection of cost " << dl.cost
                        << " cached for " << span << " us";
                    // learned at Redis's instant: the same wait, exactly
                    EXPECT_EQ(v[3], s.retry_after_us) << "cost " << cost;
                }
            }
        }
        EXPECT_GT(learned, 20);
    }
};

struct Config {
    std::int64_t limit, period_ms;
    std::uint64_t burst;
};

// fractional intervals (1500 ms / 7), bursts, a long period
const std::vector<Config> kConfigs = {
    {5, 1000, RRL_BURST_UNSET}, {7, 1500, 2}, {3, 1000, 1}, {4, 3600000, 2}};

TEST_F(DenyVersusScriptTest, FixedWindow) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        check(RRL_FIXED_WINDOW, c.limit, c.period_ms, c.burst, c.limit);
    }
}

TEST_F(DenyVersusScriptTest, SlidingWindow) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        check(RRL_SLIDING_WINDOW, c.limit, c.period_ms, c.burst, 100 + c.limit);
    }
}

TEST_F(DenyVersusScriptTest, SlidingLog) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        check(RRL_SLIDING_LOG, c.limit, c.period_ms, c.burst, 200 + c.limit);
    }
}

TEST_F(DenyVersusScriptTest, TokenBucket) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        check(RRL_TOKEN_BUCKET, c.limit, c.period_ms, c.burst, 300 + c.limit);
    }
}

TEST_F(DenyVersusScriptTest, LeakyBucket) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        check(RRL_LEAKY_BUCKET, c.limit, c.period_ms, c.burst, 400 + c.limit);
    }
}

}  // namespace
