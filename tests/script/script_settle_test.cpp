// The settle form of the script (settle= of issue 17): a request's actual
// cost A against the estimate E charged up front at Redis time T. ARGV[1]
// "settle" and the cost field "E:A:T" (single form, Redis TIME), or a
// batch entry "s<n>" then zone and "E:A:T" per limit (injected time).
// D = A - E is given back (D < 0) where the units still count, or charged
// (D > 0) even beyond the limit: a debt. The reply: a check of cost
// max(E, 1) after the settlement, not committed, 4 integers per limit.
// Real script, real redis-server, injected time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "script/algorithm.hpp"
#include "tests/script/script_fixture.hpp"
#include "tests/support/call_limit.hpp"

namespace {

using namespace rrl_test;

using Values = std::vector<std::int64_t>;

std::string alg_name(int algorithm) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? "?" : std::string(a->name);
}

const int kAlgorithms[] = {RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW,
                           RRL_SLIDING_LOG, RRL_TOKEN_BUCKET, RRL_LEAKY_BUCKET};

// n per period_ms with a capacity of n for every algorithm (leaky_bucket:
// burst n - 1; token_bucket: its default bucket of n; the others: none).
Limit limit_of(int algorithm, const std::string& key, std::int64_t n,
               std::int64_t period_ms, std::int64_t cost = 1) {
    const std::uint64_t burst = algorithm == RRL_LEAKY_BUCKET
                                    ? static_cast<std::uint64_t>(n - 1)
                                    : RRL_BURST_UNSET;
    return make_limit(algorithm, key, n, period_ms, burst, cost);
}

std::string eat(std::int64_t e, std::int64_t a, std::int64_t t) {
    return str(e) + ":" + str(a) + ":" + str(t);
}

// A request of a batch: a check (each limit's cost) or a settlement (each
// limit's "E:A:T" field).
struct Entry {
    bool settle;
    std::vector<Limit> limits;
    std::vector<std::string> fields;
};

Entry check_of(const std::vector<Limit>& limits) {
    return {false, limits, {}};
}

Entry settle_of(const std::vector<Limit>& limits,
                const std::vector<std::string>& fields) {
    return {true, limits, fields};
}

class SettleTest : public ScriptFixture {
   protected:
    // The batch form's arguments: zones once, then the entries.
    std::vector<std::string> batch_argv(const std::string& now,
                                        const std::vector<Entry>& entries,
                                        std::vector<std::string>* keys) {
        std::vector<std::vector<std::string>> zones;
        std::vector<std::string> tail;
        for (const Entry& e : entries) {
            const std::string n =
                str(static_cast<std::int64_t>(e.limits.size()));
            tail.push_back(e.settle ? "s" + n : n);
            for (size_t i = 0; i < e.limits.size(); i++) {
                const Limit& l = e.limits[i];
                std::vector<std::string> zone = {
                    l.algorithm, str(l.limit), str(l.period_ms), str(l.burst)};
                auto z = std::find(zones.begin(), zones.end(), zone);
                if (z == zones.end()) z = zones.insert(z, zone);
                keys->push_back(l.key);
                tail.push_back(str(z - zones.begin() + 1));
                tail.push_back(e.settle ? e.fields[i] : str(l.cost));
            }
        }
        std::vector<std::string> argv = {
            "batch", now, str(static_cast<std::int64_t>(zones.size()))};
        for (const auto& zone : zones) {
            argv.insert(argv.end(), zone.begin(), zone.end());
        }
        argv.insert(argv.end(), tail.begin(), tail.end());
        return argv;
    }

    // The batch at now (keys made persistent in the same call: the TTLs
    // come from injected time). The raw reply.
    Reply batch_raw(std::int64_t now, const std::vector<Entry>& entries) {
        std::vector<std::string> keys;
        std::vector<std::string> argv = batch_argv(str(now), entries, &keys);
        return evalsha_of(persisting_sha_, keys, argv);
    }

    // The same, asserting an array of integers.
    Values batch(std::int64_t now, const std::vector<Entry>& entries) {
        return integers(batch_raw(now, entries));
    }

    // A settlement of one limit at now: its 4 integers, asserting the
    // reply's shape (passed as the limit's, now) and that the C decoder
    // takes it.
    LimitResult settle(std::int64_t now, const Limit& l, std::int64_t e,
                       std::int64_t a, std::int64_t t) {
        Values v = batch(now, {settle_of({l}, {eat(e, a, t)})});
        EXPECT_EQ(v.size(), RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT);
        if (v.size() != RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT) {
            return {-1, -1, -1, -1};
        }
        EXPECT_EQ(v[0], v[2]);
        EXPECT_EQ(v[1], now);
        rrl_limit_result_t decoded[1];
        rrl_decision_t decision{};
        EXPECT_EQ(
            rrl_test::reply_decode(v.data(), v.size(), 1, decoded, &decision),
            RRL_OK);
        return {v[2], v[3], v[4], v[5]};
    }

    // A check of one limit at now, committed (the key kept).
    LimitResult request(std::int64_t now, const Limit& l) {
        Values v = batch(now, {check_of({l})});
        EXPECT_EQ(v.size(), RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT);
        if (v.size() < 6) return {-1, -1, -1, -1};
        return {v[2], v[3], v[4], v[5]};
    }

    // What a check of `cost` at now would reply, on a copy of l's key (l's
    // key unchanged), in l's base algorithm.
    LimitResult probe(const Limit& l, std::int64_t now, std::int64_t cost) {
        Limit p = with_cost(l, cost);
        p.key = copy_of(l.key);
        p.algorithm = p.algorithm.substr(0, p.algorithm.find('+'));
        const LimitResult r = run_one(now, p);
        redis_->command({"DEL", p.key});
        return r;
    }

    // The state of a key, whatever its type.
    std::string state(const std::string& key) {
        Reply t = redis_->command({"TYPE", key});
        const std::string type(t->str, t->len);
        if (type == "string") return "string:" + get(key);
        if (type == "zset") {
            std::string s = "zset:";
            for (const std::string& m : zrange(key)) s += m + ",";
            return s;
        }
        return type;
    }
};

// E = 100, A = 30: the 70 units given back are there for the next check.
TEST_F(SettleTest, RefundIsExact) {
    for (int alg : kAlgorithms) {
        SCOPED_TRACE(alg_name(alg));
        const Limit l =
            limit_of(alg, "rrl:{r:" + alg_name(alg) + "}", 200, 1000, 100);
        ASSERT_EQ(request(kT, l).passed, 1);
        EXPECT_EQ(probe(l, kT + 1, 101).passed, 0);

        const LimitResult r = settle(kT + 1, l, 100, 30, kT);
        // the reply: a check of cost 100 after the settlement
        EXPECT_EQ(r.passed, 1);
        EXPECT_EQ(r.remaining, 70);
        EXPECT_EQ(r.retry_after_us, 0);
        // 170 = 70 more than before
        EXPECT_EQ(probe(l, kT + 1, 170).passed, 1);
        EXPECT_EQ(probe(l, kT + 1, 171).passed, 0);
        EXPECT_EQ(probe(l, kT + 1, 1).remaining, 169);
    }
}

// E = 100, A = 500 beyond a capacity of 200: a debt. The reply is the
// rejection of a check of cost 100, and its retry after is exact.
TEST_F(SettleTest, DebtIsRejectedUntilTheExactRetryAfter) {
    for (int alg : kAlgorithms) {
        SCOPED_TRACE(alg_name(alg));
        const Limit l =
            limit_of(alg, "rrl:{d:" + alg_name(alg) + "}", 200, 1000, 100);
        ASSERT_EQ(request(kT, l).passed, 1);
        const std::int64_t now = kT + 1000;
        const LimitResult r = settle(now, l, 100, 500, kT);
        EXPECT_EQ(r.passed, 0);
        EXPECT_EQ(r.remaining, 0);
        ASSERT_GT(r.retry_after_us, 0);
        EXPECT_EQ(probe(l, now, 100).passed, 0);
        EXPECT_EQ(probe(l, now + r.retry_after_us - 1, 100).passed, 0);
        EXPECT_EQ(probe(l, now + r.retry_after_us, 100).passed, 1);
    }
}

// The debt is repaid at the rate (token_bucket, leaky_bucket): 300 units
// beyond the capacity of 200 per second take 1.5 s (+ the 100 asked).
TEST_F(SettleTest, BucketsRepayTheDebtAtTheRate) {
    for (int alg : {RRL_TOKEN_BUCKET, RRL_LEAKY_BUCKET}) {
        SCOPED_TRACE(alg_name(alg));
        const Limit l =
            limit_of(alg, "rrl:{b:" + alg_name(alg) + "}", 200, 1000, 100);
        ASSERT_EQ(request(kT, l).passed, 1);
        const LimitResult r = settle(kT, l, 100, 500, kT);
        EXPECT_EQ(r.passed, 0);
        // 500 taken: 500 - 200 + 100 units to refill at 200/s
        EXPECT_EQ(r.retry_after_us, 2000000);
        EXPECT_EQ(probe(l, kT + 1999999, 100).passed, 0);
        EXPECT_EQ(probe(l, kT + 2000000, 100).passed, 1);
        // full again once the debt and the 200 are refilled
        EXPECT_EQ(r.reset_after_us, 2500000);
    }
}

// fixed_window: a refund to a window that has ended is dropped; a charge
// goes to the current window (a state made when none).
TEST_F(SettleTest, FixedWindowEndedDropsARefundAndChargesTheCurrent) {
    const Limit l = limit_of(RRL_FIXED_WINDOW, "rrl:{w:fw}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    const std::string before = state(l.key);
    const std::int64_t next = kT + 1000 * kMs + 5;
    EXPECT_EQ(settle(next, l, 100, 30, kT).remaining, 100);
    EXPECT_EQ(state(l.key), before);  // dropped

    EXPECT_EQ(settle(next, l, 100, 150, kT).remaining, 50);
    EXPECT_EQ(get(l.key), str((kT + 1000 * kMs) / (1000 * kMs)) + ":50");

    // none at all: a charge makes the current window's state
    const Limit n = limit_of(RRL_FIXED_WINDOW, "rrl:{w:none}", 200, 1000, 1);
    EXPECT_EQ(settle(kT, n, 1, 21, kT - 5 * kSecond).remaining, 179);
    EXPECT_EQ(get(n.key), str(kT / (1000 * kMs)) + ":20");
}

// sliding_window: T's window's count while the state holds it (current,
// then prev); once it weighs no more, a refund is dropped and a charge
// goes to the current window's count.
TEST_F(SettleTest, SlidingWindowSettlesTheCountOfTheChargesWindow) {
    const std::int64_t w = kT / (1000 * kMs);
    const Limit l = limit_of(RRL_SLIDING_WINDOW, "rrl:{w:sw}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    EXPECT_EQ(get(l.key), str(w) + ":100:0");
    // T's window not current any more, the state not moved on: its count
    settle(kT + 1200 * kMs, l, 100, 60, kT);
    EXPECT_EQ(get(l.key), str(w) + ":60:0");
    // the state moved on: T's window is prev
    ASSERT_EQ(request(kT + 1500 * kMs, with_cost(l, 10)).passed, 1);
    EXPECT_EQ(get(l.key), str(w + 1) + ":10:60");
    settle(kT + 1500 * kMs, l, 60, 20, kT);
    EXPECT_EQ(get(l.key), str(w + 1) + ":10:20");
    settle(kT + 1500 * kMs, l, 20, 50, kT);
    EXPECT_EQ(get(l.key), str(w + 1) + ":10:50");
    // T's window weighs no more: a refund dropped, a charge to current
    const std::string before = state(l.key);
    settle(kT + 2100 * kMs, l, 50, 0, kT);
    EXPECT_EQ(state(l.key), before);
    settle(kT + 2100 * kMs, l, 50, 80, kT);
    EXPECT_EQ(get(l.key), str(w + 2) + ":30:10");
    // a refund never below zero
    settle(kT + 2100 * kMs, l, 1000, 0, kT + 2000 * kMs);
    EXPECT_EQ(get(l.key), str(w + 2) + ":0:10");
}

// token_bucket: a refund is the release's (exact while the state is the
// charge's: others passed since keep back what refilled in between).
TEST_F(SettleTest, TokenBucketRefundIsTheReleasesRule) {
    const Limit l = limit_of(RRL_TOKEN_BUCKET, "rrl:{t:tb}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    // another passed 100 ms later (20 tokens refilled in between)
    ASSERT_EQ(request(kT + 100 * kMs, with_cost(l, 10)).passed, 1);
    settle(kT + 100 * kMs, l, 100, 0, kT);
    // 120 - 10 + (100 - 20) = 190
    EXPECT_EQ(probe(l, kT + 100 * kMs, 1).remaining, 189);
}

// leaky_bucket: a refund moves the TAT back by -D intervals (the key
// deleted when that is not after now), a charge onto max(TAT, now).
TEST_F(SettleTest, LeakyBucketMovesTheTat) {
    const Limit l = limit_of(RRL_LEAKY_BUCKET, "rrl:{l:lb}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    EXPECT_EQ(get(l.key), str(kT + 500000));
    settle(kT, l, 100, 40, kT);
    EXPECT_EQ(get(l.key), str(kT + 200000));
    settle(kT, l, 40, 0, kT);
    EXPECT_EQ(get(l.key), "(nil)");
    // none (a TAT past): a charge from now
    settle(kT + 7, l, 0, 3, kT);
    EXPECT_EQ(get(l.key), str(kT + 7 + 15000));
}

// sliding_log: a refund removes entries at T; a charge adds entries at T
// (at now when T is out of the window), never more than the capacity.
TEST_F(SettleTest, SlidingLogKeepsItsCapacity) {
    const Limit l = limit_of(RRL_SLIDING_LOG, "rrl:{s:sl}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    settle(kT + 5, l, 100, 50, kT);
    EXPECT_EQ(zcard(l.key), 50);
    settle(kT + 5, l, 50, 10000, kT);
    EXPECT_EQ(zcard(l.key), 200);
    std::vector<std::string> z = zrange(l.key);
    for (size_t i = 1; i < z.size(); i += 2) EXPECT_EQ(z[i], str(kT));

    // T out of the window: the charge at now
    const Limit m = limit_of(RRL_SLIDING_LOG, "rrl:{s:m}", 200, 1000, 1);
    settle(kT, m, 1, 3, kT - 2 * kSecond);
    z = zrange(m.key);
    ASSERT_EQ(z.size(), 4u);
    EXPECT_EQ(z[1], str(kT));
    EXPECT_EQ(z[3], str(kT));
    // a refund at T out of the window: dropped
    settle(kT + 1500 * kMs, l, 100, 0, kT);
    EXPECT_EQ(zcard(l.key), 200);
    // a check's names and a settlement's stay apart at the same instant
    const Limit k = limit_of(RRL_SLIDING_LOG, "rrl:{s:k}", 200, 1000, 2);
    settle(kT, k, 0, 2, kT);
    ASSERT_EQ(request(kT, k).passed, 1);
    EXPECT_EQ(zcard(k.key), 4);
}

// A == E: nothing changes; the reply is a check of cost E (1 when E is 0).
TEST_F(SettleTest, ActualEqualToEstimateChangesNothing) {
    for (int alg : kAlgorithms) {
        SCOPED_TRACE(alg_name(alg));
        const Limit l =
            limit_of(alg, "rrl:{e:" + alg_name(alg) + "}", 200, 1000, 100);
        ASSERT_EQ(request(kT, l).passed, 1);
        const std::string before = state(l.key);
        const LimitResult r = settle(kT + 1, l, 100, 100, kT);
        EXPECT_EQ(state(l.key), before);
        const LimitResult p = probe(l, kT + 1, 100);
        EXPECT_EQ(r.passed, p.passed);
        EXPECT_EQ(r.remaining, p.remaining);
        EXPECT_EQ(r.reset_after_us, p.reset_after_us);
        EXPECT_EQ(r.retry_after_us, p.retry_after_us);
        // E = A = 0: a check of cost 1
        EXPECT_EQ(settle(kT + 1, l, 0, 0, kT).remaining,
                  probe(l, kT + 1, 1).remaining);
        EXPECT_EQ(state(l.key), before);
    }
}

// overrides=on: unlimited and block settle nothing; a rate applies its
// numbers. The reply has 4 integers per limit all the same.
TEST_F(SettleTest, OverridesApply) {
    const std::string kind = RRL_OVERRIDES_SUFFIX;
    Limit u = limit_of(RRL_FIXED_WINDOW, "rrl:{z:u}:fw", 200, 1000, 100);
    u.algorithm += kind;
    set("rrl:{z:u}:limit", "unlimited");
    LimitResult r = settle(kT, u, 100, 5000, kT);
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(state(u.key), "none");

    Limit b = limit_of(RRL_TOKEN_BUCKET, "rrl:{z:b}:tb", 200, 1000, 100);
    b.algorithm += kind;
    set("rrl:{z:b}:limit", "block");
    r = settle(kT, b, 0, 5000, kT);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.retry_after_us, 1000 * kMs);
    EXPECT_EQ(state(b.key), "none");

    // 50r/s for this key: a charge to 60 is beyond its limit
    Limit o = limit_of(RRL_FIXED_WINDOW, "rrl:{z:o}:fw", 200, 1000, 10);
    o.algorithm += kind;
    set("rrl:{z:o}:limit", "50r/s");
    ASSERT_EQ(integers(evalsha_of(persisting_sha_, {o.key},
                                {str(kT), o.algorithm, str(o.limit),
                                 str(o.period_ms), str(o.burst), "10"}))
                  .at(0),
              1);
    r = settle(kT, o, 10, 60, kT);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(get(o.key), str(kT / (1000 * kMs)) + ":60");
    // invalid: the zone's own
    set("rrl:{z:o}:limit", "what");
    EXPECT_EQ(settle(kT, o, 60, 0, kT).remaining, 140);
}

// An override larger than the zone's rate: the reply's remaining stays
// within the zone's capacity, which is all the module's decoder takes (the
// reply only tells a debt; the module checks remaining against the zone).
TEST_F(SettleTest, AnOverridesRemainingIsWithinTheZonesCapacity) {
    for (int algorithm : kAlgorithms) {
        SCOPED_TRACE(alg_name(algorithm));
        Limit o = limit_of(algorithm, "rrl:{z:big}:" + alg_name(algorithm), 10,
                           1000, 5);
        o.algorithm += RRL_OVERRIDES_SUFFIX;
        set("rrl:{z:big}:limit",
            algorithm == RRL_LEAKY_BUCKET ? "1000r/s burst=999" : "1000r/s");
        LimitResult r = settle(kT, o, 5, 1, kT);
        EXPECT_EQ(r.passed, 1);
        EXPECT_LE(r.remaining, 10);
        EXPECT_GE(r.remaining, 9);
    }
}

// A lease zone settles as its algorithm; token_bucket's held units stay
// held: a refund never lifts the tokens above burst - held.
TEST_F(SettleTest, LeaseZonesSettleAsTheirAlgorithm) {
    Limit l = limit_of(RRL_TOKEN_BUCKET, "rrl:{z:l}:tb", 200, 1000, 1);
    l.algorithm += "+lease";
    // a lease of 50 units: 150 tokens, 50 held (the cap: 150); a lease
    // zone's check has the cost field "C:W:B:T"
    std::vector<std::string> argv = {
        "batch",          str(kT),      "1", l.algorithm, str(l.limit),
        str(l.period_ms), str(l.burst), "1", "1",         "1:50:0:0"};
    Values v = integers(evalsha_of(persisting_sha_, {l.key}, argv));
    ASSERT_EQ(v.size(), 8u);
    ASSERT_EQ(v[6], 50);  // granted
    const std::string held = get(l.key);
    ASSERT_NE(held.find(":" + str(kT / 100000) + ":50:0"), std::string::npos)
        << held;
    // a charge of 70 below the cap: 80 left, the held fields kept
    LimitResult r = settle(kT, l, 50, 120, kT);
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.remaining, 30);
    EXPECT_NE(get(l.key).find(":50:0"), std::string::npos) << get(l.key);
    EXPECT_EQ(probe(l, kT, 1).remaining, 79);
    // a refund of 100: 180, capped at 150 while 50 are held
    r = settle(kT, l, 120, 20, kT);
    EXPECT_EQ(r.remaining, 30);
    EXPECT_EQ(probe(l, kT, 1).remaining, 149);
    // debts below zero add up, the held units as they were
    r = settle(kT, l, 0, 1000, kT);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 0);
    settle(kT, l, 0, 100, kT);
    EXPECT_EQ(get(l.key).rfind("-950:" + str(kT) + ":", 0), 0u) << get(l.key);
    EXPECT_NE(get(l.key).find(":50:0"), std::string::npos) << get(l.key);
    // 951 tokens to refill at 200/s for a check of 1
    EXPECT_EQ(probe(l, kT + 4755 * kMs - 1, 1).passed, 0);
    EXPECT_EQ(probe(l, kT + 4755 * kMs, 1).passed, 1);

    // fixed_window with lease=: as fixed_window
    Limit f = limit_of(RRL_FIXED_WINDOW, "rrl:{z:f}:fw", 200, 1000, 100);
    ASSERT_EQ(request(kT, f).passed, 1);
    f.algorithm += "+lease";
    EXPECT_EQ(settle(kT, f, 100, 30, kT).remaining, 70);
    EXPECT_EQ(get(f.key), str(kT / (1000 * kMs)) + ":30");
}

// Fields that are not three whole numbers are refused, nothing changed
// (the checks before them in the batch included).
TEST_F(SettleTest, BadFieldsChangeNothing) {
    const Limit l = limit_of(RRL_FIXED_WINDOW, "rrl:{x:fw}", 200, 1000, 100);
    ASSERT_EQ(request(kT, l).passed, 1);
    const std::string before = state(l.key);
    for (const char* field : {"", "100:30", "100:30:1:2", "a:30:1", "-1:30:1",
                              "100:-30:1", "100:30:-1", "1.5:30:1", "100: 30:1",
                              "100:30:1e3", "100:30:99999999999999999999"}) {
        SCOPED_TRACE(field);
        Reply r = batch_raw(kT, {check_of({l}), settle_of({l}, {field})});
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_EQ(std::string(r->str, r->len),
                  "ERR redis_ratelimit: bad arguments");
        EXPECT_EQ(state(l.key), before);
        // the single form
        r = evalsha({l.key}, {"settle", l.algorithm, str(l.limit),
                              str(l.period_ms), str(l.burst), field});
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_EQ(state(l.key), before);
    }
    // counts that are not "s<n>"
    for (const char* count : {"s", "s0", "sx", "S1", "s-1", "t1"}) {
        SCOPED_TRACE(count);
        Reply r = evalsha_of(
            persisting_sha_, {l.key},
            {"batch", str(kT), "1", l.algorithm, str(l.limit), str(l.period_ms),
             str(l.burst), count, "1", "100:30:1"});
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_EQ(state(l.key), before);
    }
    // the single form's argument count
    Reply r = evalsha({l.key}, {"settle", l.algorithm, str(l.limit),
                                str(l.period_ms), str(l.burst)});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(state(l.key), before);
}

// Checks and settlements of one batch, in order: a check after a refund
// sees it, one before does not.
TEST_F(SettleTest, BatchMixesChecksAndSettlementsInOrder) {
    const Limit a = limit_of(RRL_SLIDING_WINDOW, "rrl:{m:a}", 200, 1000, 100);
    const Limit b = limit_of(RRL_TOKEN_BUCKET, "rrl:{m:b}", 200, 1000, 100);
    Values v = batch(
        kT, {check_of({a, b}), check_of({with_cost(a, 170), with_cost(b, 170)}),
             settle_of({a, b}, {eat(100, 30, kT), eat(100, 30, kT)}),
             check_of({with_cost(a, 170), with_cost(b, 170)}), check_of({a})});
    ASSERT_EQ(v.size(), 5 * 2 + 9 * 4u);
    // the first check passes, the second is rejected (100 left)
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[10], 0);
    // the settlement: a check of cost 100 on each after the refunds
    EXPECT_EQ(v[20], 1);
    EXPECT_EQ(v[21], kT);
    EXPECT_EQ(v[23], 70);
    EXPECT_EQ(v[27], 70);
    // the check after the settlement passes: 170 were there
    EXPECT_EQ(v[30], 1);
    EXPECT_EQ(v[33], 0);
    EXPECT_EQ(v[37], 0);
    // nothing left
    EXPECT_EQ(v[40], 0);
}

// A settlement Redis fails (a key of another type): -1 for passed and all
// its integers, now as now; the batch goes on.
TEST_F(SettleTest, AFailedSettlementGivesMinusOnesAndTheBatchGoesOn) {
    const Limit bad = limit_of(RRL_FIXED_WINDOW, "rrl:{f:bad}", 200, 1000, 1);
    const Limit ok = limit_of(RRL_FIXED_WINDOW, "rrl:{f:ok}", 200, 1000, 100);
    redis_->command({"HSET", bad.key, "f", "v"});
    Values v =
        batch(kT, {check_of({ok}),
                   settle_of({ok, bad}, {eat(100, 30, kT), eat(1, 5, kT)}),
                   settle_of({ok}, {eat(10, 0, kT)})});
    ASSERT_EQ(v.size(), 6 + 10 + 6u);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[6], -1);
    EXPECT_EQ(v[7], kT);
    for (size_t i = 8; i < 16; i++) EXPECT_EQ(v[i], -1) << i;
    // the next entry settled (the failed one's first limit had been: the
    // script stops at the failing command)
    EXPECT_EQ(v[16], 1);
    EXPECT_EQ(v[17], kT);
    EXPECT_EQ(get(ok.key), str(kT / (1000 * kMs)) + ":20");
    EXPECT_EQ(state(bad.key), "hash");
}

// The single form: ARGV[1] "settle", Redis TIME as now.
TEST_F(SettleTest, SingleFormUsesRedisTime) {
    const Limit l = limit_of(RRL_FIXED_WINDOW, "rrl:{1:fw}", 200, 3600000, 100);
    Result c = run(-1, {l});
    ASSERT_EQ(c.passed, 1);
    const std::int64_t at = c.now_us;
    Values v = integers(
        evalsha({l.key}, {"settle", l.algorithm, str(l.limit), str(l.period_ms),
                          str(l.burst), eat(100, 30, at)}));
    ASSERT_EQ(v.size(), 6u);
    EXPECT_GE(v[1], at);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[3], 70);
    // a debt, two limits
    const Limit m = limit_of(RRL_TOKEN_BUCKET, "rrl:{1:tb}", 200, 3600000, 1);
    v = integers(
        evalsha({l.key, m.key},
                {"settle", l.algorithm, str(l.limit), str(l.period_ms),
                 str(l.burst), eat(30, 300, at), m.algorithm, str(m.limit),
                 str(m.period_ms), str(m.burst), eat(1, 1, at)}));
    ASSERT_EQ(v.size(), 10u);
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[2], 0);
    EXPECT_GT(v[5], 0);
    EXPECT_EQ(v[6], 1);
    EXPECT_EQ(v[7], 199);
    // the state keeps its expiry (the window's end), none made for m
    EXPECT_GT(pttl(l.key), 0);
    EXPECT_LE(pttl(l.key), 3600000);
    EXPECT_EQ(pttl(m.key), -2);
    // a state made by a settlement expires too
    const Limit n = limit_of(RRL_SLIDING_WINDOW, "rrl:{1:sw}", 200, 60000, 1);
    v = integers(
        evalsha({n.key}, {"settle", n.algorithm, str(n.limit), str(n.period_ms),
                          str(n.burst), eat(1, 5, at)}));
    ASSERT_EQ(v.size(), 6u);
    EXPECT_GT(pttl(n.key), 60000);
    EXPECT_LE(pttl(n.key), 120000);
}

}  // namespace
