// sliding_window, token_bucket and leaky_bucket (alias gcra) in the real
// Lua script against a real redis-server, with injected time; properties
// every algorithm shares (a rejection changes nothing, cost above capacity,
// expiry, exact retry/remaining, several limits in one call); and the
// core's algorithm table (effective_burst(), capacity()).
//
// Reply: passed, now_us, then per limit
//        passed, remaining, reset_after_us, retry_after_us
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

const std::string kFw = "rrl:{test:client}:fw";
const std::string kSl = "rrl:{test:client}:sl";
const std::string kSw = "rrl:{test:client}:sw";
const std::string kTb = "rrl:{test:client}:tb";
const std::string kLb = "rrl:{test:client}:lb";

// The Redis key of client "client" in zone "test" for an algorithm, as the
// module builds it.
std::string key_for(int algorithm) {
    const std::string zone = "test", client = "client";
    std::string buf(rrl_key_max_len(zone.size()), '\0');
    size_t n = rrl_key_build(buf.data(), zone.data(), zone.size(), algorithm,
                             reinterpret_cast<const unsigned char*>(client.data()),
                             client.size());
    EXPECT_GT(n, 0u);
    buf.resize(n);
    return buf;
}

std::string alg_name(int algorithm) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? "?" : std::string(a->name);
}

// One call of a sequence: at kT (or a given base) + at_us, with this cost.
struct Step {
    std::int64_t at_us;
    std::int64_t cost;
    std::int64_t passed, remaining, reset_after_us, retry_after_us;
};

class ScriptAlgorithmsTest : public ScriptFixture {
protected:
    void run_steps(std::int64_t base, const Limit& l,
                   const std::vector<Step>& steps) {
        for (size_t i = 0; i < steps.size(); i++) {
            const Step& s = steps[i];
            SCOPED_TRACE("step " + str(static_cast<std::int64_t>(i)) + " at +" +
                         str(s.at_us) + " cost " + str(s.cost));
            expect_one(base + s.at_us, with_cost(l, s.cost), s.passed,
                       s.remaining, s.reset_after_us, s.retry_after_us);
        }
    }

    // Requests of cost 1 at `now` until one is rejected; the number passed.
    int drain(std::int64_t now, const Limit& l) {
        for (int i = 0; i < 1000; i++) {
            LimitResult r = run_one(now, with_cost(l, 1));
            if (r.passed != 1) return i;
        }
        ADD_FAILURE() << "never rejected";
        return -1;
    }

    // A request rejected at `now` with retry_after r must be rejected at
    // now + r - 1 (without any change to the key) and pass at now + r; with
    // strict, the reply at now + r - 1 must then say retry after 1 us.
    // Returns r (-1 on failure).
    std::int64_t expect_retry_exact(std::int64_t now, const Limit& l,
                                    bool strict = false) {
        LimitResult first = run_one(now, l);
        EXPECT_EQ(first.passed, 0) << "at +" << now - kT;
        if (first.passed != 0) return -1;
        const std::int64_t r = first.retry_after_us;
        EXPECT_GE(r, 1);
        const std::string before = dump(l.key);
        if (r > 1) {
            LimitResult early = run_one(now + r - 1, l);
            EXPECT_EQ(early.passed, 0)
                << "passed at retry_after - 1 us (" << r - 1 << " after +"
                << now - kT << ", cost " << l.cost << ")";
            if (strict) {
                EXPECT_EQ(early.retry_after_us, 1)
                    << "1 us before the retry time (" << r - 1 << " after +"
                    << now - kT << ", cost " << l.cost
                    << "), retry_after must be 1";
            }
            EXPECT_EQ(dump(l.key), before);
        }
        LimitResult on_time = run_one(now + r, l);
        EXPECT_EQ(on_time.passed, 1)
            << "rejected at retry_after (" << r << " after +" << now - kT
            << ", cost " << l.cost << ")";
        return r;
    }
};

// ==========================================================================
// core: effective_burst(), capacity()
// ==========================================================================

TEST(AlgorithmConfig, EffectiveBurst) {
    struct Row {
        int algorithm;
        std::uint64_t limit, burst, expected;
    };
    const std::uint64_t unset = RRL_BURST_UNSET;
    const std::vector<Row> rows = {
        // not given: token_bucket's bucket holds N, the others add nothing
        {RRL_FIXED_WINDOW, 10, unset, 0},
        {RRL_SLIDING_LOG, 10, unset, 0},
        {RRL_SLIDING_WINDOW, 10, unset, 0},
        {RRL_TOKEN_BUCKET, 10, unset, 10},
        {RRL_TOKEN_BUCKET, 1, unset, 1},
        {RRL_LEAKY_BUCKET, 10, unset, 0},
        // given: taken as is, 0 included
        {RRL_FIXED_WINDOW, 10, 3, 3},
        {RRL_SLIDING_LOG, 10, 3, 3},
        {RRL_SLIDING_WINDOW, 10, 3, 3},
        {RRL_TOKEN_BUCKET, 10, 25, 25},
        {RRL_TOKEN_BUCKET, 10, 4, 4},
        {RRL_TOKEN_BUCKET, 10, 0, 0},
        {RRL_LEAKY_BUCKET, 10, 2, 2},
        {RRL_LEAKY_BUCKET, 10, 0, 0},
        // unknown algorithms: none to ask
        {-1, 10, unset, 0},
        {RRL_ALGORITHM_COUNT, 10, 5, 0},
    };
    for (const Row& r : rows) {
        const rrl::Algorithm* a = rrl::algorithm(r.algorithm);
        if (r.algorithm < 0 || r.algorithm >= RRL_ALGORITHM_COUNT) {
            EXPECT_EQ(a, nullptr) << r.algorithm;
            continue;
        }
        EXPECT_EQ(rrl::effective_burst(*a, r.limit, r.burst), r.expected)
            << alg_name(r.algorithm) << " N=" << r.limit
            << " burst=" << r.burst;
    }
}

TEST(AlgorithmConfig, Capacity) {
    struct Row {
        int algorithm;
        std::uint64_t limit, burst, expected;
    };
    const std::vector<Row> rows = {
        {RRL_FIXED_WINDOW, 10, 0, 10},   {RRL_FIXED_WINDOW, 10, 3, 13},
        {RRL_SLIDING_LOG, 10, 0, 10},    {RRL_SLIDING_LOG, 10, 3, 13},
        {RRL_SLIDING_WINDOW, 10, 0, 10}, {RRL_SLIDING_WINDOW, 10, 3, 13},
        {RRL_TOKEN_BUCKET, 10, 10, 10},  {RRL_TOKEN_BUCKET, 10, 25, 25},
        {RRL_TOKEN_BUCKET, 10, 4, 4},    {RRL_TOKEN_BUCKET, 10, 0, 0},
        {RRL_LEAKY_BUCKET, 10, 0, 1},    {RRL_LEAKY_BUCKET, 10, 2, 3},
        {RRL_LEAKY_BUCKET, 1, 0, 1},
        {-1, 10, 3, 0},                  {RRL_ALGORITHM_COUNT, 10, 3, 0},
    };
    for (const Row& r : rows) {
        const rrl::Algorithm* a = rrl::algorithm(r.algorithm);
        if (r.algorithm < 0 || r.algorithm >= RRL_ALGORITHM_COUNT) {
            EXPECT_EQ(a, nullptr) << r.algorithm;  // none to ask
            continue;
        }
        EXPECT_EQ(rrl::capacity(*a, r.limit, r.burst), r.expected)
            << alg_name(r.algorithm) << " N=" << r.limit
            << " burst=" << r.burst;
    }
    // with "burst=" not given, through effective_burst() as the module does
    const std::uint64_t defaults[RRL_ALGORITHM_COUNT] = {
        7,  // fixed_window: N
        7,  // sliding_log: N
        7,  // sliding_window: N
        7,  // token_bucket: a bucket of N
        1,  // leaky_bucket: one request at a time
    };
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        const rrl::Algorithm& alg = *rrl::algorithm(a);
        EXPECT_EQ(rrl::capacity(alg, 7,
                                rrl::effective_burst(alg, 7, RRL_BURST_UNSET)),
                  defaults[a])
            << alg_name(a);
    }
}

TEST(AlgorithmConfig, MaxCapacity) {
    // sliding_log: a member per unit, a call adds up to the capacity
    EXPECT_EQ(rrl::max_capacity(*rrl::algorithm(RRL_SLIDING_LOG)), 10000u);
    EXPECT_EQ(RRL_SLIDING_LOG_MAX_CAPACITY, 10000);
    for (int a : {RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW, RRL_TOKEN_BUCKET,
                  RRL_LEAKY_BUCKET}) {
        EXPECT_EQ(rrl::max_capacity(*rrl::algorithm(a)), UINT64_MAX)
            << alg_name(a);
    }
    // no such algorithm: nothing to ask
    EXPECT_EQ(rrl::algorithm(-1), nullptr);
    EXPECT_EQ(rrl::algorithm(RRL_ALGORITHM_COUNT), nullptr);
}

TEST(AlgorithmConfig, StateLifetime) {
    struct Row {
        int algorithm;
        std::uint64_t limit, period_ms, burst, expected;
    };
    const std::uint64_t day = 86400000;
    const std::vector<Row> rows = {
        {RRL_FIXED_WINDOW, 10, 1000, 5, 1000},
        {RRL_SLIDING_LOG, 10, 1000, 5, 1000},
        {RRL_SLIDING_WINDOW, 10, 1000, 0, 2000},      // the next window too
        {RRL_TOKEN_BUCKET, 10, 1000, 10, 1000},       // refill N in PERIOD
        {RRL_TOKEN_BUCKET, 10, 1000, 25, 2500},       // B tokens at N/PERIOD
        {RRL_TOKEN_BUCKET, 10, 1000, 4, 1000},        // at least PERIOD
        {RRL_LEAKY_BUCKET, 10, 1000, 0, 1000},        // at least PERIOD
        {RRL_LEAKY_BUCKET, 3, 1000, 5, 2000},         // (B + 1) * PERIOD / N
        {RRL_LEAKY_BUCKET, 3, 1000, 6, 2334},         // rounded up
        {RRL_SLIDING_WINDOW, 1, 365 * day, 0, 730 * day},
        // saturates instead of overflowing
        {RRL_TOKEN_BUCKET, 1, 365 * day, 1000000000, UINT64_MAX},
    };
    for (const Row& r : rows) {
        std::uint64_t got = rrl::state_lifetime_ms(
            *rrl::algorithm(r.algorithm), r.limit, r.period_ms, r.burst);
        if (r.expected == UINT64_MAX) {
            EXPECT_GT(got, RRL_MAX_STATE_MS) << alg_name(r.algorithm);
        } else {
            EXPECT_EQ(got, r.expected) << alg_name(r.algorithm) << " N="
                                       << r.limit << " burst=" << r.burst;
        }
    }
    EXPECT_EQ(rrl::algorithm(-1), nullptr);  // no such algorithm
    EXPECT_EQ(
        rrl::state_lifetime_ms(*rrl::algorithm(RRL_TOKEN_BUCKET), 0, 1000, 1),
        UINT64_MAX);
}

// ==========================================================================
// sliding_window
// ==========================================================================

// 5 per 1 s; windows [kT, kT+1s), [kT+1s, kT+2s), ...
TEST_F(ScriptAlgorithmsTest, SlidingWindowFirstWindowThenDecay) {
    const Limit l = sw(kSw, 5, 1000);
    ASSERT_EQ(l.burst, 0);
    run_steps(kT, l, {
        {0, 1, 1, 4, 2000000, 0},
        {100 * kMs, 1, 1, 3, 1900000, 0},
        {200 * kMs, 1, 1, 2, 1800000, 0},
        {300 * kMs, 1, 1, 1, 1700000, 0},
        {400 * kMs, 1, 1, 0, 1600000, 0},
        // current window full: only in the next one, once the count has
        // decayed to 4: at kT + 1s + 0.2 s
        {500 * kMs, 1, 0, 0, 1500000, 700000},
        {999999, 1, 0, 0, 1000001, 200001},
    });
    EXPECT_EQ(get(kSw), "1700000000:5:0");
    run_steps(kT, l, {
        // next window, estimate 5 * 0.800001 = 4.000005: usage back to
        // zero at the end of this window (current is 0)
        {1200 * kMs - 1, 1, 0, 0, 800001, 1},
        {1200 * kMs, 1, 1, 0, 1800000, 0},  // estimate 4
    });
    EXPECT_EQ(get(kSw), "1700000001:1:5");
    run_steps(kT, l, {
        // estimate 4 + 1: one more needs prev * (1 - e) <= 3: e = 0.4
        {1200 * kMs, 1, 0, 0, 1800000, 200000},
        {1400 * kMs, 1, 1, 0, 1600000, 0},
        // one window later: prev = 2 (the count of kT+1s..), current 0
        {2000 * kMs, 1, 1, 2, 2000000, 0},
    });
    EXPECT_EQ(get(kSw), "1700000002:1:2");
    // two windows later: nothing weighs any more
    run_steps(kT, l, {{4000 * kMs, 1, 1, 4, 2000000, 0}});
    EXPECT_EQ(get(kSw), "1700000004:1:0");
}

// 5 in window w, then at w + 1.5 P the estimate is 2.5: exactly 2 pass.
TEST_F(ScriptAlgorithmsTest, SlidingWindowHalfwayThroughTheNextWindow) {
    const Limit l = sw(kSw, 5, 1000);
    for (int i = 0; i < 5; i++) {
        expect_one(kT, l, 1, 4 - i, 2000000, 0);
    }
    run_steps(kT, l, {
        {1500 * kMs, 1, 1, 1, 1500000, 0},  // 2.5 + 1: 1.5 left, floor 1
        {1500 * kMs, 1, 1, 0, 1500000, 0},  // 3.5 + 1: 0.5 left
        // 4.5 + 1 > 5: needs 5 * (1 - e) + 2 <= 4: e = 0.6, 100 ms on
        {1500 * kMs, 1, 0, 0, 1500000, 100000},
        {1600 * kMs - 1, 1, 0, 0, 1400001, 1},  // 4.000005
        {1600 * kMs, 1, 1, 0, 1400000, 0},      // 4
    });
    EXPECT_EQ(get(kSw), "1700000001:3:5");
}

// The estimate from a given state "window:current:prev", at P = 1 s.
TEST_F(ScriptAlgorithmsTest, SlidingWindowEstimateTable) {
    struct Row {
        const char* state;  // before; nullptr: no key
        std::int64_t limit;
        std::uint64_t burst;
        std::int64_t at_us, cost;
        std::int64_t passed, remaining, reset_after_us, retry_after_us;
        const char* state_after;  // nullptr: unchanged
    };
    const std::uint64_t unset = RRL_BURST_UNSET;
    const std::vector<Row> rows = {
        // prev 7 at 30 % of the next window: estimate 4.9
        {"1700000000:7:0", 10, unset, 1300 * kMs, 1, 1, 4, 1700000, 0,
         "1700000001:1:7"},
        {"1700000000:7:0", 10, unset, 1300 * kMs, 5, 1, 0, 1700000, 0,
         "1700000001:5:7"},
        // 4.9 + 6 > 10: 7 * (1 - e) <= 4 at e = 3/7 (428571.4 us)
        {"1700000000:7:0", 10, unset, 1300 * kMs, 6, 0, 5, 700000, 128572,
         nullptr},
        // the previous window full, at the start of the next: 25 % on
        {"1700000000:4:0", 4, unset, 1000 * kMs, 1, 0, 0, 1000000, 250000,
         nullptr},
        // 1 us before the end of the next window: 0.000004 still weighs
        {"1700000000:4:0", 4, unset, 2000 * kMs - 1, 4, 0, 3, 1, 1, nullptr},
        // two windows on: nothing weighs
        {"1700000000:4:0", 4, unset, 2000 * kMs, 4, 1, 0, 2000000, 0,
         "1700000002:4:0"},
        {"1699999990:9:9", 10, unset, 0, 1, 1, 9, 2000000, 0, "1700000000:1:0"},
        // current 2 and prev 6 at half-way: estimate 5
        {"1700000001:2:6", 10, unset, 1500 * kMs, 1, 1, 4, 1500000, 0,
         "1700000001:3:6"},
        // 5 + 6 > 10: 6 * (1 - e) + 2 <= 4 at e = 2/3
        {"1700000001:2:6", 10, unset, 1500 * kMs, 6, 0, 5, 1500000, 166667,
         nullptr},
        // 2 + 9 > 10: not in this window; next: 2 * (1 - e) <= 1 at e = 1/2
        {"1700000001:2:6", 10, unset, 1500 * kMs, 9, 0, 5, 1500000, 1000000,
         nullptr},
        // burst 2: capacity 12
        {"1700000001:2:6", 10, 2, 1500 * kMs, 7, 1, 0, 1500000, 0,
         "1700000001:9:6"},
        {"1700000001:2:6", 10, 2, 1500 * kMs, 8, 0, 7, 1500000, 166667,
         nullptr},
        {"1700000001:2:6", 10, 2, 1500 * kMs, 11, 0, 7, 1500000, 1000000,
         nullptr},
        // cost over capacity: a whole period, whatever the state
        {"1700000001:2:6", 10, 2, 1500 * kMs, 13, 0, 7, 1500000, 1000000,
         nullptr},
        {nullptr, 10, 2, 1500 * kMs, 13, 0, 12, 0, 1000000, nullptr},
    };
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        SCOPED_TRACE("row " + str(static_cast<std::int64_t>(i)));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        if (r.state != nullptr) set(kSw, r.state);
        const std::string before = dump(kSw);
        const Limit l = sw(kSw, r.limit, 1000, r.burst, r.cost);
        expect_one(kT + r.at_us, l, r.passed, r.remaining, r.reset_after_us,
                   r.retry_after_us);
        if (r.state_after != nullptr) {
            EXPECT_EQ(get(kSw), r.state_after);
        } else {
            EXPECT_EQ(dump(kSw), before);
        }
        if (r.passed == 0 && r.cost <= capacity_of(RRL_SLIDING_WINDOW, l)) {
            expect_retry_exact(kT + r.at_us, l);
        }
    }
}

TEST_F(ScriptAlgorithmsTest, SlidingWindowTtlEndsWithTheNextWindow) {
    // 1.7 s to the end of the next window
    expect_one(kT + 300 * kMs, sw(kSw, 5, 1000), 1, 4, 1700000, 0);
    long long ttl = pttl(kSw);
    EXPECT_LE(ttl, 1700);
    EXPECT_GT(ttl, 1200);
    // in the next window: the state now weighs until kT + 3 s
    // (estimate 1 * 0.099999)
    expect_one(kT + 1900 * kMs + 1, sw(kSw, 5, 1000), 1, 3, 1099999, 0);
    ttl = pttl(kSw);
    EXPECT_LE(ttl, 1100);  // 1099.999 ms, rounded up
    EXPECT_GT(ttl, 600);
}

// ==========================================================================
// token_bucket
// ==========================================================================

// 5 per 1 s, no "burst=": a bucket of 5, one token every 200 ms.
TEST_F(ScriptAlgorithmsTest, TokenBucketDefaultCapacityIsN) {
    const Limit l = tb(kTb, 5, 1000);
    ASSERT_EQ(l.burst, 5);
    EXPECT_EQ(capacity_of(RRL_TOKEN_BUCKET, l), 5);
    run_steps(kT, l, {
        {0, 1, 1, 4, 200000, 0},
        {0, 1, 1, 3, 400000, 0},
        {0, 1, 1, 2, 600000, 0},
        {0, 1, 1, 1, 800000, 0},
        {0, 1, 1, 0, 1000000, 0},
        {0, 1, 0, 0, 1000000, 200000},
    });
    EXPECT_EQ(get(kTb), "0:1700000000000000");
    run_steps(kT, l, {
        {200 * kMs - 1, 1, 0, 0, 800001, 1},  // 0.999995 tokens
        {200 * kMs, 1, 1, 0, 1000000, 0},
    });
    EXPECT_EQ(get(kTb), "0:1700000000200000");
    run_steps(kT, l, {
        {700 * kMs, 1, 1, 1, 700000, 0},  // 2.5 tokens: 1.5 left
    });
    EXPECT_EQ(get(kTb), "1.5:1700000000700000");
    run_steps(kT, l, {
        {700 * kMs, 2, 0, 1, 700000, 100000},  // 1.5 < 2: 0.5 missing
        {800 * kMs, 2, 1, 0, 1000000, 0},
    });
    EXPECT_EQ(get(kTb), "0:1700000000800000");
}

TEST_F(ScriptAlgorithmsTest, TokenBucketBurstAboveNPassesAtOnce) {
    const Limit l = tb(kTb, 5, 1000, 10);
    EXPECT_EQ(capacity_of(RRL_TOKEN_BUCKET, l), 10);
    for (std::int64_t i = 0; i < 10; i++) {
        expect_one(kT, l, 1, 9 - i, 200000 * (i + 1), 0);
    }
    expect_one(kT, l, 0, 0, 2000000, 200000);
    // refilled at 5 per second, never above 10
    expect_one(kT + kSecond, l, 1, 4, 1200000, 0);  // 5 tokens
    EXPECT_EQ(get(kTb), "4:1700000001000000");
    expect_one(kT + 3600 * kSecond, l, 1, 9, 200000, 0);
    EXPECT_EQ(get(kTb), "9:1700003600000000");
    expect_one(kT + 3600 * kSecond + 100 * kMs, l, 1, 8, 300000, 0);  // 9.5
    EXPECT_EQ(get(kTb), "8.5:1700003600100000");
}

TEST_F(ScriptAlgorithmsTest, TokenBucketCostAboveOne) {
    const Limit l = tb(kTb, 10, 1000);  // a token every 100 ms
    run_steps(kT, l, {
        {0, 4, 1, 6, 400000, 0},
        {0, 4, 1, 2, 800000, 0},
        {0, 4, 0, 2, 800000, 200000},  // 2 tokens, 2 missing
        {0, 3, 0, 2, 800000, 100000},
        {0, 2, 1, 0, 1000000, 0},
        {0, 11, 0, 0, 1000000, 1000000},  // over capacity
        {150 * kMs, 2, 0, 1, 850000, 50000},
        {200 * kMs, 2, 1, 0, 1000000, 0},
    });
    // cost over capacity, on a full (idle) bucket
    run_steps(kT, l, {{3600 * kSecond, 11, 0, 10, 0, 1000000}});
    EXPECT_EQ(get(kTb), "0:1700000000200000");
}

// Retry after = the missing tokens / rate, rounded up to the microsecond.
TEST_F(ScriptAlgorithmsTest, TokenBucketRetryAfterTable) {
    struct Row {
        std::int64_t limit, period_ms;
        std::uint64_t burst;
        const char* tokens;  // stored at kT
        std::int64_t at_us, cost;
        std::int64_t remaining, reset_after_us, retry_after_us;
    };
    const std::vector<Row> rows = {
        {5, 1000, 5, "0", 50 * kMs, 1, 0, 950000, 150000},  // 0.25 tokens
        {5, 1000, 5, "1", 0, 3, 1, 800000, 400000},
        {3, 1000, 3, "0", 0, 1, 0, 1000000, 333334},   // 333333.3 us
        {7, 10000, 2, "0", kSecond, 2, 0, 1857143, 1857143},  // 0.7 tokens
        {100, 60000, 100, "0", 0, 1, 0, 60000000, 600000},
        {1, 1000, 1, "0.5", 0, 1, 0, 500000, 500000},
        {1, 1000, 3, "2.25", 250 * kMs, 3, 2, 500000, 500000},
    };
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        SCOPED_TRACE("row " + str(static_cast<std::int64_t>(i)));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        set(kTb, std::string(r.tokens) + ":" + str(kT));
        const Limit l = tb(kTb, r.limit, r.period_ms, r.burst, r.cost);
        expect_one(kT + r.at_us, l, 0, r.remaining, r.reset_after_us,
                   r.retry_after_us);
        EXPECT_EQ(get(kTb), std::string(r.tokens) + ":" + str(kT));
        EXPECT_EQ(expect_retry_exact(kT + r.at_us, l), r.retry_after_us);
    }
}

// 1 per second, one request at kT: 0.1 token at kT + 100 ms, so exactly
// 0.9 s until the next token (and until full). Rounding must not add a
// microsecond the math does not have.
TEST_F(ScriptAlgorithmsTest, TokenBucketRetryAfterIsNotRoundedPastTheExactTime) {
    const Limit l = tb(kTb, 1, 1000);
    expect_one(kT, l, 1, 0, 1000000, 0);
    expect_one(kT + 100 * kMs, l, 0, 0, 900000, 900000);
    expect_one(kT + 300 * kMs, l, 0, 0, 700000, 700000);
    // 10 per second, 7 used: 0.9 s to full at kT + 200 ms (2 refilled)
    ASSERT_EQ(redis_->integer({"DEL", kTb}), 1);
    expect_one(kT, tb(kTb, 10, 1000, RRL_BURST_UNSET, 7), 1, 3, 700000, 0);
    expect_one(kT + 200 * kMs, tb(kTb, 10, 1000, RRL_BURST_UNSET, 6), 0, 5,
               500000, 100000);
}

TEST_F(ScriptAlgorithmsTest, TokenBucketTtlIsTimeToFull) {
    // 5 per 10 s: a token every 2 s
    expect_one(kT, tb(kTb, 5, 10000), 1, 4, 2 * kSecond, 0);
    long long ttl = pttl(kTb);
    EXPECT_LE(ttl, 2000);
    EXPECT_GT(ttl, 1500);
    expect_one(kT, tb(kTb, 5, 10000, RRL_BURST_UNSET, 4), 1, 0, 10 * kSecond, 0);
    ttl = pttl(kTb);
    EXPECT_LE(ttl, 10000);
    EXPECT_GT(ttl, 9500);
    // 1 s later: 0.5 tokens, full in 9 s
    expect_one(kT + kSecond, tb(kTb, 5, 10000), 0, 0, 9 * kSecond, kSecond);
    EXPECT_LE(pttl(kTb), 10000);  // a rejection does not extend it
    // a fractional time to full is rounded up: 3 per 1 s, 1 used
    ASSERT_EQ(redis_->integer({"DEL", kTb}), 1);
    expect_one(kT, tb(kTb, 3, 1000), 1, 2, 333334, 0);
    ttl = pttl(kTb);
    EXPECT_LE(ttl, 334);
    EXPECT_GT(ttl, 200);
}

// ==========================================================================
// leaky_bucket (gcra)
// ==========================================================================

// 5 per 1 s, burst 0: one request every 200 ms exactly.
TEST_F(ScriptAlgorithmsTest, LeakyBucketOnePerInterval) {
    const Limit l = lb(kLb, 5, 1000);
    ASSERT_EQ(l.burst, 0);
    EXPECT_EQ(capacity_of(RRL_LEAKY_BUCKET, l), 1);
    run_steps(kT, l, {
        {0, 1, 1, 0, 200000, 0},
        {0, 1, 0, 0, 200000, 200000},
        {100 * kMs, 1, 0, 0, 100000, 100000},
        {200 * kMs, 1, 1, 0, 200000, 0},
        {400 * kMs, 1, 1, 0, 200000, 0},
        {400 * kMs, 1, 0, 0, 200000, 200000},
        {500 * kMs, 1, 0, 0, 100000, 100000},
        {600 * kMs, 1, 1, 0, 200000, 0},
        {1500 * kMs, 1, 1, 0, 200000, 0},  // idle since kT+0.8s
    });
    EXPECT_EQ(get(kLb), "1700000001700000");  // the TAT
    EXPECT_EQ(expect_retry_exact(kT + 1500 * kMs + 1, l), 199999);
}

// burst 2: 3 at once, then one every 200 ms.
TEST_F(ScriptAlgorithmsTest, LeakyBucketBurstThenOnePerInterval) {
    const Limit l = lb(kLb, 5, 1000, 2);
    EXPECT_EQ(capacity_of(RRL_LEAKY_BUCKET, l), 3);
    run_steps(kT, l, {
        {0, 1, 1, 2, 200000, 0},
        {0, 1, 1, 1, 400000, 0},
        {0, 1, 1, 0, 600000, 0},
        {0, 1, 0, 0, 600000, 200000},
        {200 * kMs, 1, 1, 0, 600000, 0},
        {300 * kMs, 1, 0, 0, 500000, 100000},
        {400 * kMs, 1, 1, 0, 600000, 0},
        {1000 * kMs, 1, 1, 2, 200000, 0},  // TAT reached: idle again
        {1100 * kMs, 1, 1, 1, 300000, 0},
        {1100 * kMs, 1, 1, 0, 500000, 0},
        {1100 * kMs, 1, 0, 0, 500000, 100000},
    });
    EXPECT_EQ(get(kLb), "1700000001600000");
}

TEST_F(ScriptAlgorithmsTest, LeakyBucketCost) {
    const Limit l = lb(kLb, 5, 1000, 2);
    run_steps(kT, l, {
        {0, 2, 1, 1, 400000, 0},
        {0, 2, 0, 1, 400000, 200000},
        {0, 1, 1, 0, 600000, 0},
        {200 * kMs, 2, 0, 1, 400000, 200000},
        {400 * kMs, 2, 1, 0, 600000, 0},
        {400 * kMs, 4, 0, 0, 600000, 1000000},  // over capacity (3)
    });
    EXPECT_EQ(get(kLb), "1700000001000000");
    // on an idle key: 3 passes at once, 4 never
    ASSERT_EQ(redis_->integer({"DEL", kLb}), 1);
    run_steps(kT, l, {
        {0, 4, 0, 3, 0, 1000000},
        {0, 3, 1, 0, 600000, 0},
    });
}

// A fractional interval: 3 per second, one every 333333.3 us after the
// previous pass, rounded up.
TEST_F(ScriptAlgorithmsTest, LeakyBucketFractionalInterval) {
    const Limit l = lb(kLb, 3, 1000);
    expect_one(kT, l, 1, 0, 333334, 0);
    std::int64_t last = kT;
    for (int i = 0; i < 6; i++) {
        SCOPED_TRACE("pass " + str(i + 2));
        EXPECT_EQ(expect_retry_exact(last + 1, l), 333333);
        last += 333334;
    }
    // the TAT: 7 requests' intervals after kT, 6 of them late by 2/3 us
    const double tat = std::stod(get(kLb));
    EXPECT_NEAR(tat - static_cast<double>(kT), 6 * 333334 + 1e6 / 3, 0.5);
}

// burst 2 with an interval that is not a whole number of microseconds (6
// per second: 166666.7 us): still 3 at once, at any instant.
TEST_F(ScriptAlgorithmsTest, LeakyBucketBurstWithAFractionalInterval) {
    for (std::int64_t t : {kT, kT + 123457, kT + 777777}) {
        SCOPED_TRACE("at +" + str(t - kT));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        const Limit l = lb(kLb, 6, 1000, 2);
        expect_one(t, l, 1, 2, 166667, 0);
        expect_one(t, l, 1, 1, 333334, 0);
        expect_one(t, l, 1, 0, 500000, 0);
        expect_one(t, l, 0, 0, 500000, 166667);
    }
}

TEST_F(ScriptAlgorithmsTest, LeakyBucketTtlIsTheTat) {
    const Limit l = lb(kLb, 5, 10000, 2);  // one every 2 s
    expect_one(kT, l, 1, 2, 2 * kSecond, 0);
    long long ttl = pttl(kLb);
    EXPECT_LE(ttl, 2000);
    EXPECT_GT(ttl, 1500);
    expect_one(kT, l, 1, 1, 4 * kSecond, 0);
    expect_one(kT, l, 1, 0, 6 * kSecond, 0);
    ttl = pttl(kLb);
    EXPECT_LE(ttl, 6000);
    EXPECT_GT(ttl, 5500);
}

// "gcra" names leaky_bucket in nginx.conf only: the module sends the
// canonical name, and the script knows no other.
TEST_F(ScriptAlgorithmsTest, GcraIsAConfigAliasNotAScriptName) {
    const int id = rrl::find_algorithm("gcra")->id;
    ASSERT_EQ(id, RRL_LEAKY_BUCKET);
    Reply r = evalsha({kLb}, {str(kT), "gcra", "5", "1000", "0", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len)
                  .find("redis_ratelimit: unknown algorithm gcra"),
              std::string::npos) << r->str;
    EXPECT_EQ(dump(kLb), "(nil)");
    expect_one(kT, make_limit(id, key_for(id), 5, 1000), 1, 0, 200000, 0);
    EXPECT_EQ(get(kLb), "1700000000200000");
}

// ==========================================================================
// Every algorithm
// ==========================================================================

class EveryAlgorithmTest : public ScriptAlgorithmsTest,
                           public ::testing::WithParamInterface<int> {
protected:
    int alg() const { return GetParam(); }
    std::string key() const { return key_for(GetParam()); }
    Limit limit(std::int64_t n, std::int64_t period_ms,
                std::uint64_t burst = RRL_BURST_UNSET,
                std::int64_t cost = 1) const {
        return make_limit(alg(), key(), n, period_ms, burst, cost);
    }
};

std::string param_name(const ::testing::TestParamInfo<int>& info) {
    return alg_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, EveryAlgorithmTest,
                         ::testing::Range(0, static_cast<int>(RRL_ALGORITHM_COUNT)),
                         param_name);

TEST_P(EveryAlgorithmTest, RejectionChangesNothing) {
    const Limit l = limit(3, 1000);
    const std::int64_t cap = capacity_of(alg(), l);
    ASSERT_GE(cap, 1);
    EXPECT_EQ(drain(kT, l), cap);
    const std::string before = dump(key());
    ASSERT_NE(before, "(nil)");
    const long long ttl_before = pttl(key());
    ASSERT_GT(ttl_before, 0);
    for (std::int64_t at : {std::int64_t{0}, std::int64_t{1}, std::int64_t{10},
                            100 * kMs}) {
        for (std::int64_t cost : {std::int64_t{1}, std::int64_t{2}, cap, cap + 1}) {
            SCOPED_TRACE("at +" + str(at) + " cost " + str(cost));
            LimitResult r = run_one(kT + at, with_cost(l, cost));
            EXPECT_EQ(r.passed, 0);
            EXPECT_EQ(dump(key()), before);
        }
    }
    EXPECT_LE(pttl(key()), ttl_before);  // not extended
}

TEST_P(EveryAlgorithmTest, CostAboveCapacityAlwaysRejected) {
    struct Row {
        std::int64_t n, period_ms;
        std::uint64_t burst;
    };
    for (const Row& row : std::vector<Row>{{5, 1000, RRL_BURST_UNSET},
                                           {5, 1000, 2},
                                           {5, 10000, 0},
                                           {1, 1000, RRL_BURST_UNSET}}) {
        const Limit base = limit(row.n, row.period_ms, row.burst);
        const std::int64_t cap = capacity_of(alg(), base);
        SCOPED_TRACE("N=" + str(row.n) + " burst=" + str(base.burst) +
                     " capacity " + str(cap));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        // idle key: nothing to reset, a whole period to wait, nothing stored
        expect_one(kT, with_cost(base, cap + 1), 0, cap, 0,
                   row.period_ms * kMs);
        expect_one(kT, with_cost(base, cap + 100), 0, cap, 0,
                   row.period_ms * kMs);
        EXPECT_EQ(dump(key()), "(nil)");
        if (cap == 0) {
            expect_one(kT + 3600 * kSecond, base, 0, 0, 0, row.period_ms * kMs);
            EXPECT_EQ(dump(key()), "(nil)");
            continue;
        }
        // exactly the capacity passes on an idle key
        LimitResult r = run_one(kT, with_cost(base, cap));
        EXPECT_EQ(r.passed, 1);
        EXPECT_EQ(r.remaining, 0);
        const std::string state = dump(key());
        // and over it is still rejected with state, even long after
        r = run_one(kT + 100 * kMs, with_cost(base, cap + 1));
        EXPECT_EQ(r.passed, 0);
        EXPECT_EQ(r.retry_after_us, row.period_ms * kMs);
        EXPECT_EQ(dump(key()), state);
        r = run_one(kT + 3600 * kSecond, with_cost(base, cap + 1));
        EXPECT_EQ(r.passed, 0);
        EXPECT_EQ(r.remaining, cap);
        EXPECT_EQ(r.retry_after_us, row.period_ms * kMs);
        EXPECT_EQ(dump(key()), state);
    }
}

// One request at kT + 0.3 s of "5r/10s": how long each keeps its state.
TEST_P(EveryAlgorithmTest, KeysExpireWhenTheStateNoLongerMatters) {
    const long long expected_ms[RRL_ALGORITHM_COUNT] = {
        9700,   // fixed_window: the end of the window
        10000,  // sliding_log: one period
        19700,  // sliding_window: the end of the next window
        2000,   // token_bucket: full again after one token (2 s)
        2000,   // leaky_bucket: the TAT
    };
    LimitResult r = run_one(kT + 300 * kMs, limit(5, 10000));
    ASSERT_EQ(r.passed, 1);
    EXPECT_EQ(r.reset_after_us, expected_ms[alg()] * kMs);
    const long long ttl = pttl(key());
    EXPECT_LE(ttl, expected_ms[alg()]);
    EXPECT_GT(ttl, expected_ms[alg()] - 1000);
}

// After every reply, `remaining` more requests of cost 1 pass at the same
// instant, and no more (a rejection reports 0).
TEST_P(EveryAlgorithmTest, RemainingIsExactlyWhatStillPasses) {
    const Limit l = limit(5, 1000, alg() == RRL_LEAKY_BUCKET ? 2 : RRL_BURST_UNSET);
    const std::vector<std::int64_t> instants = {
        0,       199900,     350 * kMs, 1200 * kMs,          1399950,
        1700 * kMs, 1999999, 2500 * kMs, 2500 * kMs + 199999, 4000 * kMs};
    for (std::int64_t at : instants) {
        SCOPED_TRACE("at +" + str(at));
        std::vector<LimitResult> replies;
        for (int i = 0; i < 20; i++) {
            replies.push_back(run_one(kT + at, l));
            if (replies.back().passed != 1) break;
        }
        ASSERT_EQ(replies.back().passed, 0) << "never rejected";
        for (size_t i = 0; i < replies.size(); i++) {
            const std::int64_t still = static_cast<std::int64_t>(replies.size()) -
                                       static_cast<std::int64_t>(i) - 2;
            EXPECT_EQ(replies[i].remaining, i + 1 < replies.size() ? still : 0)
                << "reply " << i << " of " << replies.size()
                << (replies[i].passed ? " (passed)" : " (rejected)");
        }
    }
}

// A request retried exactly retry_after later passes; 1 us earlier it is
// rejected (costs 1 and 2, several rates, at several instants).
TEST_P(EveryAlgorithmTest, RetryAfterIsExact) {
    struct Rate {
        std::int64_t n, period_ms;
    };
    for (const Rate& rate : std::vector<Rate>{
             {5, 1000}, {3, 1000}, {6, 1000}, {7, 10000}, {100, 60000}, {1, 1000}}) {
        // a burst so that cost 2 fits in every bucket
        std::uint64_t burst = RRL_BURST_UNSET;
        if (alg() == RRL_LEAKY_BUCKET) burst = 2;
        if (alg() == RRL_TOKEN_BUCKET) {
            burst = static_cast<std::uint64_t>(std::max<std::int64_t>(rate.n, 2));
        }
        const Limit l = limit(rate.n, rate.period_ms, burst);
        const std::int64_t interval = rate.period_ms * kMs / rate.n;
        for (std::int64_t cost : {std::int64_t{1}, std::int64_t{2}}) {
            if (cost > capacity_of(alg(), l)) continue;
            for (std::int64_t d : {std::int64_t{1}, interval / 3 + 7, interval - 1}) {
                SCOPED_TRACE(str(rate.n) + "r/" + str(rate.period_ms) + "ms cost " +
                             str(cost) + " at +" + str(d));
                ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
                // fixed_window's windows stay aligned on the epoch
                const std::int64_t base =
                    kT + (alg() == RRL_FIXED_WINDOW ? 0 : 123457);
                ASSERT_EQ(drain(base, l), capacity_of(alg(), l));
                expect_retry_exact(base + d, with_cost(l, cost), true);
            }
        }
    }
}

// The same at a slow rate, 1 per hour, where one microsecond is a small
// fraction of a request.
TEST_P(EveryAlgorithmTest, RetryAfterIsExactForSlowRates) {
    const Limit l = limit(1, 3600 * 1000);
    for (std::int64_t d : {std::int64_t{1}, 1000 * kSecond}) {
        SCOPED_TRACE("at +" + str(d));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        ASSERT_EQ(drain(kT, l), 1);
        expect_retry_exact(kT + d, l, true);
    }
}

// ==========================================================================
// Several limits, all five algorithms, in one call
// ==========================================================================

// The reply of one limit at kT (first call) and kT + 500 ms (second call):
// "loose" is 100 per 10 s (leaky_bucket with burst 10), "tight" 1 per 1 s.
struct MixCase {
    Limit loose, tight;
    LimitResult loose_first, tight_first, loose_second, tight_second;
};

constexpr std::int64_t kMixSecond = 500 * kMs;

MixCase mix_case(int a) {
    const std::string k = key_for(a);
    switch (a) {
        case RRL_FIXED_WINDOW:
            return {fw("rrl:{loose:c}:fw", 100, 10000), fw(k, 1, 1000),
                    {1, 99, 10000000, 0}, {1, 0, 1000000, 0},
                    {1, 98, 9500000, 0}, {0, 0, 500000, 500000}};
        case RRL_SLIDING_LOG:
            return {sl("rrl:{loose:c}:sl", 100, 10000), sl(k, 1, 1000),
                    {1, 99, 10000000, 0}, {1, 0, 1000000, 0},
                    {1, 98, 10000000, 0}, {0, 0, 500000, 500000}};
        case RRL_SLIDING_WINDOW:
            return {sw("rrl:{loose:c}:sw", 100, 10000), sw(k, 1, 1000),
                    {1, 99, 20000000, 0}, {1, 0, 2000000, 0},
                    {1, 98, 19500000, 0}, {0, 0, 1500000, 1500000}};
        case RRL_TOKEN_BUCKET:
            // the loose bucket is full again after 100 ms
            return {tb("rrl:{loose:c}:tb", 100, 10000), tb(k, 1, 1000),
                    {1, 99, 100000, 0}, {1, 0, 1000000, 0},
                    {1, 99, 100000, 0}, {0, 0, 500000, 500000}};
        default:
            return {lb("rrl:{loose:c}:lb", 100, 10000, 10), lb(k, 1, 1000),
                    {1, 10, 100000, 0}, {1, 0, 1000000, 0},
                    {1, 10, 100000, 0}, {0, 0, 500000, 500000}};
    }
}

void append(std::vector<std::int64_t>& v, const LimitResult& r) {
    v.insert(v.end(), {r.passed, r.remaining, r.reset_after_us, r.retry_after_us});
}

// The tight limit of the parameter's algorithm comes last, after the loose
// limits of the four others; only it rejects the second call.
TEST_P(EveryAlgorithmTest, OnlyTheLastOfFiveLimitsRejectsNothingConsumed) {
    std::vector<Limit> limits;
    std::vector<std::int64_t> first = {1, kT}, second = {0, kT + kMixSecond};
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        if (a == alg()) continue;
        const MixCase m = mix_case(a);
        limits.push_back(m.loose);
        append(first, m.loose_first);
        append(second, m.loose_second);
    }
    const MixCase mine = mix_case(alg());
    limits.push_back(mine.tight);
    append(first, mine.tight_first);
    append(second, mine.tight_second);
    ASSERT_EQ(limits.size(), 5u);

    Result r1 = run(kT, limits);
    ASSERT_FALSE(r1.error) << r1.error_text;
    EXPECT_EQ(r1.raw, first);
    EXPECT_EQ(r1.decode_rc, RRL_OK);

    std::vector<std::string> dumps;
    std::vector<long long> ttls;
    for (const Limit& l : limits) {
        dumps.push_back(dump(l.key));
        ttls.push_back(pttl(l.key));
        EXPECT_NE(dumps.back(), "(nil)") << l.key;
    }

    Result r2 = run(kT + kMixSecond, limits);
    ASSERT_FALSE(r2.error) << r2.error_text;
    EXPECT_EQ(r2.raw, second);
    ASSERT_EQ(r2.decode_rc, RRL_OK);
    EXPECT_EQ(r2.decision.passed, 0);
    EXPECT_EQ(r2.decision.reported, 4u);
    for (size_t i = 0; i < limits.size(); i++) {
        EXPECT_EQ(dump(limits[i].key), dumps[i]) << limits[i].key;
        EXPECT_LE(pttl(limits[i].key), ttls[i]) << limits[i].key;
    }
}

// Fresh keys, the last limit's cost over its capacity: no key is created.
TEST_P(EveryAlgorithmTest, OverCapacityLastLimitCreatesNoKey) {
    std::vector<Limit> limits;
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        if (a != alg()) limits.push_back(mix_case(a).loose);
    }
    Limit last = mix_case(alg()).tight;
    last.cost = capacity_of(alg(), last) + 1;
    limits.push_back(last);
    Result r = run(kT, limits);
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.passed, 0);
    ASSERT_EQ(r.limits.size(), 5u);
    for (size_t i = 0; i < 4; i++) EXPECT_EQ(r.limits[i].passed, 1) << i;
    EXPECT_EQ(r.limits[4].passed, 0);
    EXPECT_EQ(r.limits[4].retry_after_us, kSecond);
    EXPECT_EQ(r.decode_rc, RRL_OK);
    for (const Limit& l : limits) EXPECT_EQ(dump(l.key), "(nil)") << l.key;
    EXPECT_EQ(redis_->integer({"DBSIZE"}), 0);
}

// ==========================================================================
// Informational: memory per key
// ==========================================================================

// Prints MEMORY USAGE (SAMPLES 0: every element counted) of one key per
// algorithm; asserts nothing about the figures.
TEST_F(ScriptAlgorithmsTest, MemoryUsagePerKey) {
    auto usage = [this](const std::string& key) {
        return redis_->integer({"MEMORY", "USAGE", key, "SAMPLES", "0"});
    };
    std::ostringstream report;
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        const Limit l = make_limit(a, key_for(a), 100, 60000);
        ASSERT_EQ(run_one(kT, l).passed, 1);
        const long long bytes = usage(l.key);
        ASSERT_GT(bytes, 0);
        report << "[ MEMORY   ] " << alg_name(a) << ", 1 request: " << bytes
               << " B (key " << l.key.size() << " B, value \""
               << (a == RRL_SLIDING_LOG ? "zset" : get(l.key)) << "\")\n";
        RecordProperty("memory_" + alg_name(a) + "_1", static_cast<int>(bytes));
    }
    const Limit l = sl(key_for(RRL_SLIDING_LOG), 100, 60000);
    for (std::int64_t i = 1; i < 100; i++) {
        ASSERT_EQ(run_one(kT + i * kMs, l).passed, 1) << i;
    }
    ASSERT_EQ(zcard(l.key), 100);
    const long long bytes = usage(l.key);
    ASSERT_GT(bytes, 0);
    report << "[ MEMORY   ] sliding_log, 100 requests: " << bytes << " B (key "
           << l.key.size() << " B)\n";
    RecordProperty("memory_sliding_log_100", static_cast<int>(bytes));
    std::cout << report.str();
}

}  // namespace
