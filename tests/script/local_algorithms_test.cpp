// local_check(): the algorithms decided locally ("redis_ratelimit_fail
// local") on a state kept by the caller. The same exact expectations as the
// script tests, then the local results compared with the real script's, on
// a real redis-server with injected time, for long deterministic request
// sequences: every reply and every stored state must be identical.
#include "local/local_algorithms.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

// local_check() as RRL_OK, or RRL_ERROR for an algorithm, limit or period
// it refuses
int check_locally(int algorithm, std::uint64_t limit, std::uint64_t period_ms,
                  std::uint64_t burst, std::uint64_t cost, std::int64_t now_us,
                  const rrl_local_state_t* state, rrl_local_state_t* next,
                  rrl_limit_result_t* result) {
    return rrl::local_check({algorithm, limit, period_ms, burst, cost}, now_us,
                            *state, next, result)
               ? RRL_OK
               : RRL_ERROR;
}

// an algorithm's id by its name, RRL_ERROR for none
int algorithm_id(const std::string& name) {
    const rrl::Algorithm* a = rrl::find_algorithm(name);
    return a == nullptr ? RRL_ERROR : a->id;
}

using namespace rrl_test;

// The caller's side of local limiting: states by key, all limits of a
// request checked, the new states kept only if every limit passed.
class LocalStore {
   public:
    struct Decision {
        int rc = RRL_OK;
        bool passed = true;
        std::vector<rrl_limit_result_t> limits;
    };

    Decision check(std::int64_t now, const std::vector<Limit>& limits) {
        Decision d;
        std::vector<rrl_local_state_t> next(limits.size());
        for (size_t i = 0; i < limits.size(); i++) {
            const Limit& l = limits[i];
            rrl_limit_result_t r{};
            int algorithm = algorithm_id(l.algorithm);
            d.rc = check_locally(algorithm, static_cast<uint64_t>(l.limit),
                                 static_cast<uint64_t>(l.period_ms),
                                 static_cast<uint64_t>(l.burst),
                                 static_cast<uint64_t>(l.cost), now,
                                 &states_[l.key], &next[i], &r);
            if (d.rc != RRL_OK) return d;
            d.passed = d.passed && r.passed;
            d.limits.push_back(r);
        }
        if (d.passed) {
            for (size_t i = 0; i < limits.size(); i++) {
                states_[limits[i].key] = next[i];
            }
        }
        return d;
    }

    rrl_limit_result_t check_one(std::int64_t now, const Limit& l) {
        Decision d = check(now, {l});
        EXPECT_EQ(d.rc, RRL_OK);
        return d.limits.empty() ? rrl_limit_result_t{-1, -1, -1, -1}
                                : d.limits[0];
    }

    rrl_local_state_t& state(const std::string& key) { return states_[key]; }

    // The state as the script stores it in Redis (see lua/*.lua).
    std::string redis_value(const Limit& l) {
        const rrl_local_state_t& s = states_[l.key];
        char buf[128];
        if (l.algorithm == "fixed_window") {
            std::snprintf(buf, sizeof(buf), "%lld:%lld",
                          static_cast<long long>(s.a),
                          static_cast<long long>(s.b));
        } else if (l.algorithm == "sliding_window") {
            std::snprintf(
                buf, sizeof(buf), "%lld:%lld:%lld", static_cast<long long>(s.a),
                static_cast<long long>(s.b), static_cast<long long>(s.c));
        } else if (l.algorithm == "token_bucket") {
            std::snprintf(buf, sizeof(buf), "%.17g:%lld", s.c,
                          static_cast<long long>(s.a));
        } else {
            char frac[32] = "";
            if (s.c != 0) std::snprintf(frac, sizeof(frac), "%.9f", s.c);
            std::snprintf(buf, sizeof(buf), "%lld%s",
                          static_cast<long long>(s.a),
                          s.c != 0 ? frac + 1 : "");
        }
        return buf;
    }

   private:
    std::map<std::string, rrl_local_state_t> states_;
};

struct Step {
    std::int64_t at_us;  // offset from kT
    std::int64_t cost;
    std::int64_t passed, remaining, reset_after_us, retry_after_us;
};

void run_steps(LocalStore& store, const Limit& l,
               const std::vector<Step>& steps) {
    for (size_t i = 0; i < steps.size(); i++) {
        const Step& s = steps[i];
        SCOPED_TRACE("step " + str(static_cast<std::int64_t>(i)) + " at +" +
                     str(s.at_us) + " cost " + str(s.cost));
        rrl_limit_result_t r =
            store.check_one(kT + s.at_us, with_cost(l, s.cost));
        EXPECT_EQ(r.passed, s.passed);
        EXPECT_EQ(r.remaining, s.remaining);
        EXPECT_EQ(r.reset_after_us, s.reset_after_us);
        EXPECT_EQ(r.retry_after_us, s.retry_after_us);
    }
}

// ==========================================================================
// The script tests' expectations, locally
// ==========================================================================

TEST(LocalCheck, FixedWindowCountsExactlyAtWindowEdges) {
    LocalStore store;
    const Limit l = fw("fw", 5, 1000);
    run_steps(
        store, l,
        {
            {0, 1, 1, 4, 1000000, 0},
            {100 * kMs, 1, 1, 3, 900000, 0},
            {200 * kMs, 1, 1, 2, 800000, 0},
            {300 * kMs, 1, 1, 1, 700000, 0},
            {400 * kMs, 1, 1, 0, 600000, 0},
            {500 * kMs, 1, 0, 0, 500000, 500000},
            {999999, 1, 0, 0, 1, 1},
            {kSecond, 1, 1, 4, 1000000, 0},
            {kSecond + 1, 1, 1, 3, 999999, 0},
            // cost over what remains consumes nothing, over capacity: a period
            {kSecond + 2, 4, 0, 3, 999998, 999998},
            {kSecond + 3, 6, 0, 3, 999997, kSecond},
            {kSecond + 4, 3, 1, 0, 999996, 0},
        });
    EXPECT_EQ(store.redis_value(l), "1700000001:5");
}

TEST(LocalCheck, SlidingWindowFirstWindowThenDecay) {
    LocalStore store;
    const Limit l = sw("sw", 5, 1000);
    run_steps(store, l,
              {
                  {0, 1, 1, 4, 2000000, 0},
                  {100 * kMs, 1, 1, 3, 1900000, 0},
                  {200 * kMs, 1, 1, 2, 1800000, 0},
                  {300 * kMs, 1, 1, 1, 1700000, 0},
                  {400 * kMs, 1, 1, 0, 1600000, 0},
                  {500 * kMs, 1, 0, 0, 1500000, 700000},
                  {999999, 1, 0, 0, 1000001, 200001},
                  {1200 * kMs - 1, 1, 0, 0, 800001, 1},
                  {1200 * kMs, 1, 1, 0, 1800000, 0},
                  {1200 * kMs, 1, 0, 0, 1800000, 200000},
                  {1400 * kMs, 1, 1, 0, 1600000, 0},
                  {2000 * kMs, 1, 1, 2, 2000000, 0},
              });
    EXPECT_EQ(store.redis_value(l), "1700000002:1:2");
    run_steps(store, l, {{4000 * kMs, 1, 1, 4, 2000000, 0}});
    EXPECT_EQ(store.redis_value(l), "1700000004:1:0");
}

// lua/sliding_window.lua's estimate from a given state, at P = 1 s.
TEST(LocalCheck, SlidingWindowEstimateTable) {
    struct Row {
        rrl_local_state_t state;  // window, current, previous
        std::int64_t limit;
        std::uint64_t burst;
        std::int64_t at_us, cost;
        std::int64_t passed, remaining, reset_after_us, retry_after_us;
        const char* state_after;  // nullptr: unchanged
    };
    const std::uint64_t unset = RRL_BURST_UNSET;
    const std::vector<Row> rows = {
        {{1700000000, 7, 0},
         10,
         unset,
         1300 * kMs,
         1,
         1,
         4,
         1700000,
         0,
         "1700000001:1:7"},
        {{1700000000, 7, 0},
         10,
         unset,
         1300 * kMs,
         6,
         0,
         5,
         700000,
         128572,
         nullptr},
        {{1700000000, 4, 0},
         4,
         unset,
         1000 * kMs,
         1,
         0,
         0,
         1000000,
         250000,
         nullptr},
        {{1700000000, 4, 0}, 4, unset, 2000 * kMs - 1, 4, 0, 3, 1, 1, nullptr},
        {{1700000000, 4, 0},
         4,
         unset,
         2000 * kMs,
         4,
         1,
         0,
         2000000,
         0,
         "1700000002:4:0"},
        {{1699999990, 9, 9},
         10,
         unset,
         0,
         1,
         1,
         9,
         2000000,
         0,
         "1700000000:1:0"},
        {{1700000001, 2, 6},
         10,
         unset,
         1500 * kMs,
         1,
         1,
         4,
         1500000,
         0,
         "1700000001:3:6"},
        {{1700000001, 2, 6},
         10,
         unset,
         1500 * kMs,
         6,
         0,
         5,
         1500000,
         166667,
         nullptr},
        {{1700000001, 2, 6},
         10,
         unset,
         1500 * kMs,
         9,
         0,
         5,
         1500000,
         1000000,
         nullptr},
        {{1700000001, 2, 6},
         10,
         2,
         1500 * kMs,
         7,
         1,
         0,
         1500000,
         0,
         "1700000001:9:6"},
        {{1700000001, 2, 6},
         10,
         2,
         1500 * kMs,
         8,
         0,
         7,
         1500000,
         166667,
         nullptr},
        {{1700000001, 2, 6},
         10,
         2,
         1500 * kMs,
         13,
         0,
         7,
         1500000,
         1000000,
         nullptr},
        {{0, 0, 0}, 10, 2, 1500 * kMs, 13, 0, 12, 0, 1000000, nullptr},
    };
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        SCOPED_TRACE("row " + str(static_cast<std::int64_t>(i)));
        LocalStore store;
        const Limit l = sw("sw", r.limit, 1000, r.burst, r.cost);
        store.state("sw") = r.state;
        const std::string before = store.redis_value(l);
        run_steps(store, l,
                  {{r.at_us, r.cost, r.passed, r.remaining, r.reset_after_us,
                    r.retry_after_us}});
        EXPECT_EQ(store.redis_value(l),
                  r.state_after != nullptr ? r.state_after : before);
    }
}

// No log fits a fixed-size state: sliding_log is decided as sliding_window.
TEST(LocalCheck, SlidingLogIsDecidedAsSlidingWindow) {
    LocalStore log_store, window_store;
    const Limit log = sl("k", 5, 1000, 1), window = sw("k", 5, 1000, 1);
    for (std::int64_t at = 0; at < 5 * kSecond; at += 73 * kMs) {
        SCOPED_TRACE("at +" + str(at));
        rrl_limit_result_t a = log_store.check_one(kT + at, log);
        rrl_limit_result_t b = window_store.check_one(kT + at, window);
        EXPECT_EQ(a.passed, b.passed);
        EXPECT_EQ(a.remaining, b.remaining);
        EXPECT_EQ(a.reset_after_us, b.reset_after_us);
        EXPECT_EQ(a.retry_after_us, b.retry_after_us);
    }
    // 6 at once, as sliding_window (the log would say reset in 1 s)
    LocalStore fresh;
    for (int i = 0; i < 6; i++) {
        EXPECT_EQ(fresh.check_one(kT + 300 * kMs, log).remaining, 5 - i);
    }
    rrl_limit_result_t r = fresh.check_one(kT + 300 * kMs, log);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.reset_after_us, 1700000);
}

TEST(LocalCheck, TokenBucketDefaultCapacityIsN) {
    LocalStore store;
    const Limit l = tb("tb", 5, 1000);
    run_steps(store, l,
              {
                  {0, 1, 1, 4, 200000, 0},
                  {0, 1, 1, 3, 400000, 0},
                  {0, 1, 1, 2, 600000, 0},
                  {0, 1, 1, 1, 800000, 0},
                  {0, 1, 1, 0, 1000000, 0},
                  {0, 1, 0, 0, 1000000, 200000},
                  {200 * kMs - 1, 1, 0, 0, 800001, 1},
                  {200 * kMs, 1, 1, 0, 1000000, 0},
                  {700 * kMs, 1, 1, 1, 700000, 0},
              });
    EXPECT_EQ(store.redis_value(l), "1.5:1700000000700000");
    run_steps(store, l,
              {
                  {700 * kMs, 2, 0, 1, 700000, 100000},
                  {800 * kMs, 2, 1, 0, 1000000, 0},
                  {800 * kMs, 6, 0, 0, 1000000, 1000000},  // over capacity
              });
    EXPECT_EQ(store.redis_value(l), "0:1700000000800000");
}

TEST(LocalCheck, TokenBucketRetryAfterTable) {
    struct Row {
        std::int64_t limit, period_ms;
        std::uint64_t burst;
        double tokens;  // at kT
        std::int64_t at_us, cost;
        std::int64_t remaining, reset_after_us, retry_after_us;
    };
    const std::vector<Row> rows = {
        {5, 1000, 5, 0, 50 * kMs, 1, 0, 950000, 150000},
        {5, 1000, 5, 1, 0, 3, 1, 800000, 400000},
        {3, 1000, 3, 0, 0, 1, 0, 1000000, 333334},
        {7, 10000, 2, 0, kSecond, 2, 0, 1857143, 1857143},
        {100, 60000, 100, 0, 0, 1, 0, 60000000, 600000},
        {1, 1000, 1, 0.5, 0, 1, 0, 500000, 500000},
        {1, 1000, 3, 2.25, 250 * kMs, 3, 2, 500000, 500000},
    };
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        SCOPED_TRACE("row " + str(static_cast<std::int64_t>(i)));
        LocalStore store;
        const Limit l = tb("tb", r.limit, r.period_ms, r.burst, r.cost);
        store.state("tb") = {kT, 0, r.tokens};
        run_steps(store, l,
                  {{r.at_us, r.cost, 0, r.remaining, r.reset_after_us,
                    r.retry_after_us}});
        // and it passes exactly then, not 1 us earlier
        EXPECT_EQ(
            store.check_one(kT + r.at_us + r.retry_after_us - 1, l).passed, 0);
        EXPECT_EQ(store.check_one(kT + r.at_us + r.retry_after_us, l).passed,
                  1);
    }
}

TEST(LocalCheck, LeakyBucketBurstThenOnePerInterval) {
    LocalStore store;
    const Limit l = lb("lb", 5, 1000, 2);
    run_steps(store, l,
              {
                  {0, 1, 1, 2, 200000, 0},
                  {0, 1, 1, 1, 400000, 0},
                  {0, 1, 1, 0, 600000, 0},
                  {0, 1, 0, 0, 600000, 200000},
                  {200 * kMs, 1, 1, 0, 600000, 0},
                  {300 * kMs, 1, 0, 0, 500000, 100000},
                  {400 * kMs, 1, 1, 0, 600000, 0},
                  {1000 * kMs, 1, 1, 2, 200000, 0},
                  {1100 * kMs, 1, 1, 1, 300000, 0},
                  {1100 * kMs, 1, 1, 0, 500000, 0},
                  {1100 * kMs, 1, 0, 0, 500000, 100000},
                  {1100 * kMs, 4, 0, 0, 500000, 1000000},  // over capacity (3)
              });
    EXPECT_EQ(store.redis_value(l), "1700000001600000");
}

// 3 per second: a TAT with a fraction, stored as the script stores it (9
// decimals, read back: the second interval adds to 333333.333333333).
TEST(LocalCheck, LeakyBucketFractionalInterval) {
    LocalStore store;
    const Limit l = lb("lb", 3, 1000, 2);
    run_steps(store, l,
              {
                  {0, 1, 1, 2, 333334, 0},
                  {0, 1, 1, 1, 666667, 0},
              });
    EXPECT_EQ(store.redis_value(l), "1700000000666666.666666666");
    run_steps(store, l,
              {
                  {0, 1, 1, 0, 1000000, 0},
                  {0, 1, 0, 0, 1000000, 333334},
                  {333334, 1, 1, 0, 1000000, 0},
              });
}

TEST(LocalCheck, CostAboveCapacityOnAnIdleKey) {
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        SCOPED_TRACE(rrl::algorithm(a)->name.data());
        LocalStore store;
        const Limit l = make_limit(a, "k", 5, 10000, RRL_BURST_UNSET, 1);
        const std::int64_t cap = capacity_of(a, l);
        run_steps(store, l, {{0, cap + 1, 0, cap, 0, 10 * kSecond}});
        const rrl_local_state_t& s = store.state("k");
        EXPECT_TRUE(s.a == 0 && s.b == 0 && s.c == 0) << "state written";
        rrl_limit_result_t r = store.check_one(kT, with_cost(l, cap));
        EXPECT_EQ(r.passed, 1);
        EXPECT_EQ(r.remaining, 0);
    }
}

TEST(LocalCheck, BadArguments) {
    rrl_local_state_t state{}, next{};
    rrl_limit_result_t r{};
    EXPECT_EQ(check_locally(-1, 5, 1000, 0, 1, kT, &state, &next, &r),
              RRL_ERROR);
    EXPECT_EQ(check_locally(RRL_ALGORITHM_COUNT, 5, 1000, 0, 1, kT, &state,
                            &next, &r),
              RRL_ERROR);
    EXPECT_EQ(
        check_locally(RRL_FIXED_WINDOW, 0, 1000, 0, 1, kT, &state, &next, &r),
        RRL_ERROR);
    EXPECT_EQ(
        check_locally(RRL_LEAKY_BUCKET, 5, 0, 0, 1, kT, &state, &next, &r),
        RRL_ERROR);
    EXPECT_EQ(
        check_locally(RRL_LEAKY_BUCKET, 5, 1000, 0, 1, kT, &state, &next, &r),
        RRL_OK);
}

// ==========================================================================
// Local results against the real script's
// ==========================================================================

class LocalVersusScriptTest : public ScriptFixture {
   protected:
    // Requests at irregular times (bursts at one instant, gaps of a
    // fraction of an interval, of several periods) with costs 1 to
    // capacity + 1; the local replies and states must be the script's.
    void each_config(int algorithm, const std::string& key, std::uint64_t seed);

    void compare(const std::vector<Limit>& limits, std::int64_t start,
                 std::uint64_t seed, int steps) {
        LocalStore store;
        Sequence seq(seed);
        std::int64_t now = start;
        std::int64_t period_us = limits[0].period_ms * kMs;
        std::int64_t interval = period_us / limits[0].limit;
        int passed = 0, rejected = 0;

        for (int i = 0; i < steps; i++) {
            switch (seq.next(8)) {
                case 0:
                case 1:
                    break;  // the same instant
                case 2:
                    now += static_cast<std::int64_t>(seq.next(1000));
                    break;
                case 3:
                case 4:
                case 5:
                    now += static_cast<std::int64_t>(
                        seq.next(static_cast<std::uint64_t>(interval) + 1));
                    break;
                case 6:
                    now += static_cast<std::int64_t>(
                        seq.next(static_cast<std::uint64_t>(period_us) + 1));
                    break;
                default:
                    now += static_cast<std::int64_t>(seq.next(3)) * period_us +
                           static_cast<std::int64_t>(seq.next(997));
                    break;
            }
            std::vector<Limit> request = limits;
            for (Limit& l : request) {
                const int a = algorithm_id(l.algorithm);
                const auto cap = static_cast<std::uint64_t>(capacity_of(a, l));
                l.cost = 1;
                if (seq.next(6) == 0) {
                    l.cost += static_cast<std::int64_t>(seq.next(cap + 1));
                }
            }
            SCOPED_TRACE("step " + str(i) + " at +" + str(now - start));

            // the keys' TTLs run on the real clock, not the injected one
            // (local states do not expire either): made persistent within
            // the script call, before any can expire
            Result script = run(now, request, true);
            ASSERT_FALSE(script.error) << script.error_text;
            ASSERT_EQ(script.limits.size(), request.size());
            LocalStore::Decision local = store.check(now, request);
            ASSERT_EQ(local.rc, RRL_OK);

            EXPECT_EQ(script.passed, local.passed ? 1 : 0);
            for (size_t j = 0; j < request.size(); j++) {
                const LimitResult& s = script.limits[j];
                const rrl_limit_result_t& l = local.limits[j];
                SCOPED_TRACE(request[j].algorithm + " cost " +
                             str(request[j].cost));
                EXPECT_EQ(l.passed, s.passed);
                EXPECT_EQ(l.remaining, s.remaining);
                EXPECT_EQ(l.reset_after_us, s.reset_after_us);
                EXPECT_EQ(l.retry_after_us, s.retry_after_us);
                if (!redis_->command({"EXISTS", request[j].key})->integer) {
                    continue;
                }
                EXPECT_EQ(store.redis_value(request[j]), get(request[j].key));
            }
            (local.passed ? passed : rejected)++;
            if (HasFailure()) return;
        }
        // the sequence exercised both outcomes
        EXPECT_GT(passed, steps / 20);
        EXPECT_GT(rejected, steps / 40);
    }
};

struct Config {
    std::int64_t limit, period_ms;
    std::uint64_t burst;
};

const std::uint64_t kUnset = RRL_BURST_UNSET;
const std::vector<Config> kConfigs = {
    {5, 1000, kUnset}, {3, 1000, 2},     {7, 10000, kUnset},
    {6, 1000, 1},      {100, 60000, 10}, {1, 3600 * 1000, kUnset},
};

// One algorithm's single limit over every configuration, each from its
// own seed.
void LocalVersusScriptTest::each_config(int algorithm, const std::string& key,
                                        std::uint64_t seed) {
    for (const Config& c : kConfigs) {
        SCOPED_TRACE(str(c.limit) + "r/" + str(c.period_ms) + "ms");
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        compare({make_limit(algorithm, key, c.limit, c.period_ms, c.burst)},
                kT + 123457, seed++, 400);
    }
}

TEST_F(LocalVersusScriptTest, FixedWindow) {
    each_config(RRL_FIXED_WINDOW, "rrl:{c:1}:fw", 1);
}

TEST_F(LocalVersusScriptTest, SlidingWindow) {
    each_config(RRL_SLIDING_WINDOW, "rrl:{c:1}:sw", 100);
}

TEST_F(LocalVersusScriptTest, TokenBucket) {
    each_config(RRL_TOKEN_BUCKET, "rrl:{c:1}:tb", 200);
}

TEST_F(LocalVersusScriptTest, LeakyBucket) {
    each_config(RRL_LEAKY_BUCKET, "rrl:{c:1}:lb", 300);
}

// Four limits in one request, all or nothing: a rejection by one writes
// no state for any, locally as in the script.
TEST_F(LocalVersusScriptTest, FourLimitsAllOrNothing) {
    compare({make_limit(RRL_SLIDING_WINDOW, "rrl:{m:1}:sw", 5, 1000),
             make_limit(RRL_FIXED_WINDOW, "rrl:{m:1}:fw", 12, 3000, 1),
             make_limit(RRL_TOKEN_BUCKET, "rrl:{m:1}:tb", 4, 1000, 6),
             make_limit(RRL_LEAKY_BUCKET, "rrl:{m:1}:lb", 8, 1000, 3)},
            kT + 777, 400, 1500);
}

}  // namespace
