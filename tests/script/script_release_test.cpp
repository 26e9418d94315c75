// The release form of the script (reserve-then-release across Redis
// Cluster slots): a passed check is a reservation; a release gives back
// what it took, as far as it still counts, never creating a key and never
// leaving a state more generous than if the reserved request had never
// come. Real script, real redis-server, injected time.
//
// Most tests run the same requests on two keys, a (with the reservation,
// then released) and b (without it), and compare what a check would say
// on copies of both keys, at many instants, without changing either.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "script/algorithm.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

std::string alg_name(int algorithm) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? "?" : std::string(a->name);
}

// n per period_ms with a capacity of n for every algorithm (leaky_bucket:
// burst n - 1; token_bucket: its default bucket of n; the others: no burst).
Limit limit_of(int algorithm, const std::string& key, std::int64_t n,
               std::int64_t period_ms, std::int64_t cost = 1) {
    const std::uint64_t burst =
        algorithm == RRL_LEAKY_BUCKET ? static_cast<std::uint64_t>(n - 1)
                                      : RRL_BURST_UNSET;
    return make_limit(algorithm, key, n, period_ms, burst, cost);
}

class ReleaseTest : public ScriptFixture {
protected:
    // A key expires in real time, counted from injected time: it could go
    // while the injected clock stands still. Once its expiry has been
    // checked (or where it is not the point), a key is held: PERSIST
    // changes nothing else (by design, a state no longer matters when it
    // expires).
    void hold(const Limit& l) { redis_->command({"PERSIST", l.key}); }

    // A check at `now`, the key held.
    LimitResult request(std::int64_t now, const Limit& l) {
        LimitResult r = run_one(now, l);
        hold(l);
        return r;
    }

    // A release of one limit, the key held.
    long long release_held(std::int64_t at, std::int64_t now, const Limit& l) {
        long long n = release(at, now, {l});
        hold(l);
        return n;
    }

    // What a check of cost 1 and one of cost 2 at `now` would reply, each
    // on a copy of l's key (l's key unchanged).
    struct Probe {
        LimitResult one, two;
    };

    LimitResult probe_cost(const Limit& l, std::int64_t now, std::int64_t cost) {
        Limit p = with_cost(l, cost);
        p.key = copy_of(l.key);
        const LimitResult r = run_one(now, p);
        redis_->command({"DEL", p.key});
        return r;
    }

    Probe probe(const Limit& l, std::int64_t now) {
        return {probe_cost(l, now, 1), probe_cost(l, now, 2)};
    }

    static void expect_equal(const LimitResult& a, const LimitResult& b) {
        EXPECT_EQ(a.passed, b.passed);
        EXPECT_EQ(a.remaining, b.remaining);
        EXPECT_EQ(a.reset_after_us, b.reset_after_us);
        EXPECT_EQ(a.retry_after_us, b.retry_after_us);
    }

    // a (released) answers at `now` exactly as b (never reserved).
    void expect_as_if_never(const Limit& a, const Limit& b, std::int64_t now) {
        SCOPED_TRACE("probe at +" + str(now - kT));
        const Probe pa = probe(a, now), pb = probe(b, now);
        {
            SCOPED_TRACE("cost 1");
            expect_equal(pa.one, pb.one);
        }
        SCOPED_TRACE("cost 2");
        expect_equal(pa.two, pb.two);
    }

    // a lets through no more at `now` than b; returns whether they differ.
    bool expect_not_more_generous(const Limit& a, const Limit& b,
                                  std::int64_t now) {
        SCOPED_TRACE("probe at +" + str(now - kT));
        const Probe pa = probe(a, now), pb = probe(b, now);
        bool differ = false;
        for (auto [ra, rb] : {std::pair{pa.one, pb.one}, std::pair{pa.two, pb.two}}) {
            EXPECT_LE(ra.passed, rb.passed);
            if (ra.passed == rb.passed) {  // else: after a pass, before one
                EXPECT_LE(ra.remaining, rb.remaining);
                EXPECT_GE(ra.retry_after_us, rb.retry_after_us);
            }
            differ = differ || ra.remaining != rb.remaining ||
                     ra.reset_after_us != rb.reset_after_us ||
                     ra.retry_after_us != rb.retry_after_us;
        }
        return differ;
    }

    // The same check at `now` on both: the same reply.
    void expect_same_reply(std::int64_t now, const Limit& a, const Limit& b) {
        SCOPED_TRACE("request at +" + str(now - kT) + " cost " + str(a.cost));
        expect_equal(request(now, a), request(now, b));
    }

    // The tokens and time of a token_bucket state.
    std::pair<double, std::int64_t> bucket(const std::string& key) {
        const std::string s = get(key);
        const size_t colon = s.find(':');
        EXPECT_NE(colon, std::string::npos) << s;
        if (colon == std::string::npos) return {-1, -1};
        return {std::stod(s.substr(0, colon)), std::stoll(s.substr(colon + 1))};
    }
};

class ReleaseEveryAlgorithmTest : public ReleaseTest,
                                  public ::testing::WithParamInterface<int> {
protected:
    int alg() const { return GetParam(); }
    Limit a(std::int64_t n, std::int64_t period_ms, std::int64_t cost = 1) const {
        return limit_of(alg(), "rrl:{a:c}:" + alg_name(alg()), n, period_ms, cost);
    }
    Limit b(std::int64_t n, std::int64_t period_ms, std::int64_t cost = 1) const {
        return limit_of(alg(), "rrl:{b:c}:" + alg_name(alg()), n, period_ms, cost);
    }
};

std::string param_name(const ::testing::TestParamInfo<int>& info) {
    return alg_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ReleaseEveryAlgorithmTest,
                         ::testing::Range(0, static_cast<int>(RRL_ALGORITHM_COUNT)),
                         param_name);

// The scenario of the tests below: 5 per 1 s (capacity 5), requests of
// cost 1 at +100 ms and +250 ms on both keys, then the reservation, cost
// 2 at +400 ms, on a only.
constexpr std::int64_t kR = kT + 400 * kMs;

// Probe instants after the release: the same window, fixed_window's next
// one (kT + 1 s), sliding_window's next ones, buckets full again.
const std::vector<std::int64_t> kProbes = {
    0, 1, 150 * kMs, 599999, 600 * kMs, 800 * kMs, 1100 * kMs, 1599999,
    1600 * kMs, 2100 * kMs};

// --- as if the request had never come -------------------------------------

TEST_P(ReleaseEveryAlgorithmTest, ReleasedAtOnceIsAsIfTheRequestNeverCame) {
    for (const Limit& l : {a(5, 1000), b(5, 1000)}) {
        ASSERT_EQ(request(kT + 100 * kMs, l).passed, 1);
        ASSERT_EQ(request(kT + 250 * kMs, l).passed, 1);
    }
    ASSERT_EQ(request(kR, a(5, 1000, 2)).passed, 1);
    EXPECT_EQ(release_held(kR, kR, a(5, 1000, 2)), 1);
    for (std::int64_t at : kProbes) expect_as_if_never(a(5, 1000), b(5, 1000), kR + at);
    // and the same requests from here on get the same replies
    for (std::int64_t at : {std::int64_t{0}, 50 * kMs, 50 * kMs, 50 * kMs,
                            300 * kMs, 700 * kMs, 1700 * kMs}) {
        expect_same_reply(kR + at, a(5, 1000), b(5, 1000));
    }
}

// Released 7 ms later, nothing else in between: exact for all but
// leaky_bucket, whose state has no time to tell whether the bucket without
// the reservation went idle meanwhile: it keeps back the 7 ms.
TEST_P(ReleaseEveryAlgorithmTest, ReleasedLaterWithNothingInBetween) {
    for (const Limit& l : {a(5, 1000), b(5, 1000)}) {
        ASSERT_EQ(request(kT + 100 * kMs, l).passed, 1);
        ASSERT_EQ(request(kT + 250 * kMs, l).passed, 1);
    }
    ASSERT_EQ(request(kR, a(5, 1000, 2)).passed, 1);
    EXPECT_EQ(release_held(kR, kR + 7 * kMs, a(5, 1000, 2)), 1);
    if (alg() == RRL_LEAKY_BUCKET) {
        // TAT 900 ms with the reservation, 500 ms without: 400 - 7 back
        EXPECT_EQ(get(a(5, 1000).key), "1700000000507000");
        EXPECT_EQ(get(b(5, 1000).key), "1700000000500000");
        int differ = 0;
        for (std::int64_t at : kProbes) {
            differ += expect_not_more_generous(a(5, 1000), b(5, 1000),
                                               kR + 7 * kMs + at);
        }
        EXPECT_GT(differ, 0);
        return;
    }
    for (std::int64_t at : kProbes) {
        expect_as_if_never(a(5, 1000), b(5, 1000), kR + 7 * kMs + at);
    }
}

// Another request passes on both keys between the reservation and its
// release: only the reservation's 2 units go back.
TEST_P(ReleaseEveryAlgorithmTest, OnlyTheReservedUnitsGoBack) {
    for (const Limit& l : {a(5, 1000), b(5, 1000)}) {
        ASSERT_EQ(request(kT + 100 * kMs, l).passed, 1);
        ASSERT_EQ(request(kT + 250 * kMs, l).passed, 1);
    }
    ASSERT_EQ(request(kR, a(5, 1000, 2)).passed, 1);
    ASSERT_EQ(request(kR + 10 * kMs, a(5, 1000)).passed, 1);
    ASSERT_EQ(request(kR + 10 * kMs, b(5, 1000)).passed, 1);
    EXPECT_EQ(release_held(kR, kR + 20 * kMs, a(5, 1000, 2)), 1);
    const std::int64_t now = kR + 20 * kMs;
    if (alg() == RRL_TOKEN_BUCKET) {
        // 1.55 tokens at +410 ms; back: 2 less what refilled in the 10 ms
        // since the reservation (0.05), as the bucket without it might
        // have overflowed that much; b holds 3.55 there
        auto [tokens, at] = bucket(a(5, 1000).key);
        EXPECT_NEAR(tokens, 3.5, 1e-9);
        EXPECT_EQ(at, kR + 10 * kMs);
        auto [tokens_b, at_b] = bucket(b(5, 1000).key);
        EXPECT_NEAR(tokens_b, 3.55, 1e-9);
        EXPECT_EQ(at_b, kR + 10 * kMs);
    } else if (alg() == RRL_LEAKY_BUCKET) {
        // TAT 1100 ms; back 400 ms less the 20 ms since; b: 700 ms
        EXPECT_EQ(get(a(5, 1000).key), "1700000000720000");
        EXPECT_EQ(get(b(5, 1000).key), "1700000000700000");
    }
    if (alg() == RRL_TOKEN_BUCKET || alg() == RRL_LEAKY_BUCKET) {
        for (std::int64_t at : kProbes) {
            expect_not_more_generous(a(5, 1000), b(5, 1000), now + at);
        }
        return;
    }
    for (std::int64_t at : kProbes) expect_as_if_never(a(5, 1000), b(5, 1000), now + at);
}

// --- when the reservation no longer counts ---------------------------------

// The last instant after a reservation of cost 2 at +400 ms on a fresh key
// (5 per 1 s) at which it still counts, as an offset from it.
std::int64_t counts_until(int algorithm) {
    switch (algorithm) {
        case RRL_FIXED_WINDOW: return 600 * kMs - 1;     // its window ends
        case RRL_SLIDING_LOG: return 1000 * kMs - 1;     // its entries leave
        case RRL_SLIDING_WINDOW: return 1600 * kMs - 1;  // the next window ends
        default: return 400 * kMs - 1;                   // 2 tokens, 2 intervals
    }
}

TEST_P(ReleaseEveryAlgorithmTest, ReleasedAtTheLastInstantItCounts) {
    ASSERT_EQ(request(kR, a(5, 1000, 2)).passed, 1);
    const std::int64_t now = kR + counts_until(alg());
    EXPECT_EQ(release(kR, now, {a(5, 1000, 2)}), 1);
    EXPECT_NE(pttl(a(5, 1000).key), -1);  // gone, or expiring
    hold(a(5, 1000));
    // b: never used
    for (std::int64_t at : {std::int64_t{0}, std::int64_t{1}, 200 * kMs}) {
        expect_as_if_never(a(5, 1000), b(5, 1000), now + at);
    }
}

TEST_P(ReleaseEveryAlgorithmTest, ReleasedOnceItNoLongerCountsChangesNothing) {
    ASSERT_EQ(request(kR, a(5, 1000, 2)).passed, 1);
    const std::string state = dump(a(5, 1000).key);
    const std::int64_t gone = kR + counts_until(alg()) + 1;
    for (std::int64_t now : {gone, gone + 1, kT + 3600 * kSecond}) {
        SCOPED_TRACE("release at +" + str(now - kT));
        EXPECT_EQ(release_held(kR, now, a(5, 1000, 2)), 0);
        EXPECT_EQ(dump(a(5, 1000).key), state);
    }
    // a request on both keys, then the stale reservation's release: the
    // fresh state (and only it) is left alone
    const std::int64_t later = kR + 1600 * kMs;
    ASSERT_EQ(request(later, a(5, 1000)).passed, 1);
    ASSERT_EQ(request(later, b(5, 1000)).passed, 1);
    const std::string fresh = dump(a(5, 1000).key);
    EXPECT_EQ(release_held(kR, later + 1, a(5, 1000, 2)), 0);
    EXPECT_EQ(dump(a(5, 1000).key), fresh);
    for (std::int64_t at : {std::int64_t{1}, 100 * kMs, 500 * kMs}) {
        expect_as_if_never(a(5, 1000), b(5, 1000), later + at);
    }
}

TEST_P(ReleaseEveryAlgorithmTest, ReleaseOfAMissingKeyCreatesNoKey) {
    for (std::int64_t cost : {std::int64_t{1}, std::int64_t{2}, std::int64_t{6}}) {
        for (std::int64_t delay : {std::int64_t{0}, 1 * kMs, 900 * kMs}) {
            SCOPED_TRACE("cost " + str(cost) + " after " + str(delay));
            EXPECT_EQ(release(kR, kR + delay, {a(5, 1000, cost)}), 0);
            EXPECT_EQ(redis_->integer({"DBSIZE"}), 0);
        }
    }
    // the key gone (expired, evicted) between the reservation and the release
    ASSERT_EQ(run_one(kR, a(5, 1000, 2)).passed, 1);
    ASSERT_EQ(redis_->integer({"DEL", a(5, 1000).key}), 1);
    EXPECT_EQ(release(kR, kR + 1, {a(5, 1000, 2)}), 0);
    EXPECT_EQ(redis_->integer({"DBSIZE"}), 0);
}

// --- never more than the limit ---------------------------------------------

// Capacity 4 reserved one unit at a time at one instant; 2 released: then
// exactly 2 more pass, and 4 in all are held.
TEST_P(ReleaseEveryAlgorithmTest, ReleasedUnitsPassAgainAndNoMore) {
    const std::int64_t t = kT + 123 * kMs;
    const Limit l = a(4, 1000);
    for (int i = 0; i < 4; i++) ASSERT_EQ(run_one(t, l).passed, 1) << i;
    ASSERT_EQ(run_one(t, l).passed, 0);
    EXPECT_EQ(release(t, t, {l}), 1);
    EXPECT_EQ(release(t, t, {l}), 1);
    LimitResult r = run_one(t, l);
    EXPECT_EQ(r.passed, 1);
    EXPECT_EQ(r.remaining, 1);
    EXPECT_EQ(run_one(t, l).passed, 1);
    r = run_one(t, l);
    EXPECT_EQ(r.passed, 0);
    EXPECT_EQ(r.remaining, 0);
    // the last two, given back as one release of cost 2 a microsecond
    // later: 2 pass again, not 3
    EXPECT_EQ(release(t, t + 1, {with_cost(l, 2)}), 1);
    EXPECT_EQ(run_one(t + 1, with_cost(l, 3)).passed, 0);
    EXPECT_EQ(run_one(t + 1, with_cost(l, 2)).passed, 1);
    EXPECT_EQ(run_one(t + 1, l).passed, 0);
}

// Redis Cluster: two limits in two slots, one call each at the same time;
// when one passes and the other rejects, the passed one is released (at
// once, or a little later: 1 ms at the scale of 1 s per 1 ms used here).
// Every request is decided exactly as one atomic call with both limits
// decides it (leaky_bucket released later: never more than its rate
// allows instead).
TEST_P(ReleaseEveryAlgorithmTest, ReserveThenReleaseDecidesAsOneAtomicCall) {
    // 3 per 1000 s and 5 per 2000 s, requests 1 s to 151 s apart: keys
    // expire in real time, and no expiry here may come before the next
    // request (at most a few ms later in real time) would see it
    const std::int64_t unit = 1000 * kMs;  // 1 "ms" of the test: 1 s
    for (std::int64_t delay : {std::int64_t{0}, unit}) {
        SCOPED_TRACE("released after " + str(delay));
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        const std::string name = alg_name(alg());
        const Limit ax = limit_of(alg(), "rrl:{ax}:" + name, 3, 1000 * 1000),
                    ay = limit_of(alg(), "rrl:{ay}:" + name, 5, 2000 * 1000),
                    cx = limit_of(alg(), "rrl:{cx}:" + name, 3, 1000 * 1000),
                    cy = limit_of(alg(), "rrl:{cy}:" + name, 5, 2000 * 1000);
        const bool exact = delay == 0 || alg() != RRL_LEAKY_BUCKET;
        std::uint32_t seed = 12345;
        auto next = [&seed](std::uint32_t n) {
            seed = seed * 1103515245u + 12345u;
            return (seed >> 16) % n;
        };
        std::int64_t t = kT + 7 * kMs;
        int releases = 0, passed = 0, rejected = 0;
        std::vector<std::pair<std::int64_t, std::int64_t>> x_passes;
        for (int i = 0; i < 400; i++) {
            t += unit + next(150) * unit + next(1000000);
            const std::int64_t cost_x = 1 + next(2), cost_y = 1 + next(2);
            SCOPED_TRACE("request " + str(i) + " at +" + str(t - kT));
            Result atomic = run(t, {with_cost(ax, cost_x), with_cost(ay, cost_y)});
            ASSERT_FALSE(atomic.error) << atomic.error_text;
            Result rx = run(t, {with_cost(cx, cost_x)});
            Result ry = run(t, {with_cost(cy, cost_y)});
            ASSERT_FALSE(rx.error || ry.error);
            if (rx.passed != ry.passed) {
                const Limit& held = rx.passed ? cx : cy;
                const std::int64_t at = rx.passed ? rx.now_us : ry.now_us;
                const long long n = release(
                    at, t + delay, {with_cost(held, rx.passed ? cost_x : cost_y)});
                // fixed_window: nothing to give back once the window is over
                const bool rolled = alg() == RRL_FIXED_WINDOW &&
                                    (t + delay) / held.period_ms / kMs !=
                                        t / held.period_ms / kMs;
                ASSERT_EQ(n, rolled ? 0 : 1);
                releases++;
            }
            const std::int64_t cluster = rx.passed && ry.passed;
            cluster ? passed++ : rejected++;
            if (cluster) x_passes.push_back({t, cost_x});
            if (exact) {
                ASSERT_EQ(cluster, atomic.passed);
                ASSERT_EQ(rx.raw[2], atomic.raw[2]);  // per limit, all four
                ASSERT_EQ(rx.raw[3], atomic.raw[3]);
                ASSERT_EQ(rx.raw[4], atomic.raw[4]);
                ASSERT_EQ(rx.raw[5], atomic.raw[5]);
                ASSERT_EQ(ry.raw[2], atomic.raw[6]);
                ASSERT_EQ(ry.raw[3], atomic.raw[7]);
                ASSERT_EQ(ry.raw[4], atomic.raw[8]);
                ASSERT_EQ(ry.raw[5], atomic.raw[9]);
            }
        }
        EXPECT_GT(releases, 40);
        EXPECT_GT(passed, 40);
        EXPECT_GT(rejected, 40);
        if (!exact) {
            // GCRA with burst 2, 1 per 1000/3 s: in any span, the units
            // passed fit in (burst + 1) intervals plus the span
            const double interval = 1000.0 * unit / 3;
            for (size_t i = 0; i < x_passes.size(); i++) {
                std::int64_t units = 0;
                for (size_t j = i; j < x_passes.size(); j++) {
                    units += x_passes[j].second;
                    const double span = static_cast<double>(x_passes[j].first -
                                                            x_passes[i].first);
                    ASSERT_LE(units * interval, 3 * interval + span + 1e-3)
                        << "passes " << i << ".." << j;
                }
            }
        }
    }
}

// --- expiry -----------------------------------------------------------------

// 5 per 10 s: a reservation of cost 2 and a request of cost 1 at +400 ms,
// the reservation released at +500 ms: the key keeps the expiry a commit
// would give that state.
TEST_P(ReleaseEveryAlgorithmTest, ReleasedKeyKeepsItsExpiry) {
    const long long expected_ms[RRL_ALGORITHM_COUNT] = {
        9500,   // fixed_window: the end of the window
        10000,  // sliding_log: one period after its newest commit, unchanged
        19500,  // sliding_window: the end of the next window
        1900,   // token_bucket: 4.05 tokens, full in 0.95 / 0.5 per s
        2000,   // leaky_bucket: TAT +6.4 s, back 4 s less 0.1 s: +2.5 s
    };
    ASSERT_EQ(run_one(kR, a(5, 10000, 2)).passed, 1);
    ASSERT_EQ(run_one(kR, a(5, 10000, 1)).passed, 1);
    EXPECT_EQ(release(kR, kR + 100 * kMs, {a(5, 10000, 2)}), 1);
    ASSERT_NE(dump(a(5, 10000).key), "(nil)");
    const long long ttl = pttl(a(5, 10000).key);
    EXPECT_NE(ttl, -1);  // never persistent
    EXPECT_LE(ttl, expected_ms[alg()]);
    EXPECT_GT(ttl, expected_ms[alg()] - 1000);
}

// ==========================================================================
// Each algorithm's state
// ==========================================================================

const std::string kFw = "rrl:{test:client}:fw";
const std::string kSl = "rrl:{test:client}:sl";
const std::string kSw = "rrl:{test:client}:sw";
const std::string kTb = "rrl:{test:client}:tb";
const std::string kLb = "rrl:{test:client}:lb";

TEST_F(ReleaseTest, FixedWindowTakesFromItsWindowOnly) {
    const Limit l = fw(kFw, 10, 1000);
    expect_one(kT + 100 * kMs, with_cost(l, 3), 1, 7, 900000, 0);
    expect_one(kT + 200 * kMs, with_cost(l, 4), 1, 3, 800000, 0);
    EXPECT_EQ(release(kT + 200 * kMs, kT + 300 * kMs, {with_cost(l, 4)}), 1);
    EXPECT_EQ(get(kFw), "1700000000:3");
    long long ttl = pttl(kFw);
    EXPECT_LE(ttl, 700);
    EXPECT_GT(ttl, 200);
    // never below 0
    EXPECT_EQ(release(kT + 200 * kMs, kT + 300 * kMs, {with_cost(l, 5)}), 1);
    EXPECT_EQ(get(kFw), "1700000000:0");
    EXPECT_GT(pttl(kFw), 0);
    EXPECT_EQ(release(kT + 200 * kMs, kT + 300 * kMs, {l}), 0);  // nothing held
    EXPECT_EQ(get(kFw), "1700000000:0");
    // a reservation of the previous window, on the current window's count
    expect_one(kT + kSecond, with_cost(l, 2), 1, 8, kSecond, 0);
    EXPECT_EQ(release(kT + 999999, kT + kSecond, {with_cost(l, 2)}), 0);
    EXPECT_EQ(get(kFw), "1700000001:2");
}

TEST_F(ReleaseTest, SlidingWindowTakesFromTheReservationsWindow) {
    const Limit l = sw(kSw, 10, 1000);
    set(kSw, "1700000000:5:4");
    // the current window's count
    EXPECT_EQ(release(kT + 300 * kMs, kT + 400 * kMs, {with_cost(l, 2)}), 1);
    EXPECT_EQ(get(kSw), "1700000000:3:4");
    long long ttl = pttl(kSw);  // the end of the next window
    EXPECT_LE(ttl, 1600);
    EXPECT_GT(ttl, 1100);
    // the state not rolled over yet: its count is the previous window's now
    EXPECT_EQ(release(kT + 300 * kMs, kT + 1500 * kMs, {with_cost(l, 1)}), 1);
    EXPECT_EQ(get(kSw), "1700000000:2:4");
    ttl = pttl(kSw);
    EXPECT_LE(ttl, 500);
    EXPECT_GT(ttl, 0);
    // the state rolled over: the reservation is in its previous count
    set(kSw, "1700000001:1:5");
    EXPECT_EQ(release(kT + 300 * kMs, kT + 1500 * kMs, {with_cost(l, 2)}), 1);
    EXPECT_EQ(get(kSw), "1700000001:1:3");
    EXPECT_EQ(release(kT + 300 * kMs, kT + 1500 * kMs, {with_cost(l, 7)}), 1);
    EXPECT_EQ(get(kSw), "1700000001:1:0");  // never below 0
    EXPECT_EQ(release(kT + 300 * kMs, kT + 1500 * kMs, {l}), 0);
    // two windows on, or a window the state does not hold: nothing
    for (const char* state : {"1700000001:1:5", "1700000000:5:4"}) {
        set(kSw, state);
        EXPECT_EQ(release(kT + 300 * kMs, kT + 2000 * kMs, {l}), 0) << state;
        EXPECT_EQ(get(kSw), state);
    }
    set(kSw, "1700000000:5:4");
    EXPECT_EQ(release(kT + 1300 * kMs, kT + 1400 * kMs, {l}), 0);
    EXPECT_EQ(release(kT - 700 * kMs, kT + 1400 * kMs, {l}), 0);
    EXPECT_EQ(get(kSw), "1700000000:5:4");
}

TEST_F(ReleaseTest, SlidingLogRemovesEntriesOfTheReservationsInstant) {
    const Limit l = sl(kSl, 10, 10000);
    expect_one(kT, with_cost(l, 2), 1, 8, 10 * kSecond, 0);
    expect_one(kT + kSecond, with_cost(l, 3), 1, 5, 10 * kSecond, 0);
    expect_one(kT + 2 * kSecond, l, 1, 4, 10 * kSecond, 0);
    EXPECT_EQ(release(kT + kSecond, kT + 3 * kSecond, {with_cost(l, 3)}), 1);
    EXPECT_EQ(zrange(kSl), (std::vector<std::string>{
                               str(kT) + ":1", str(kT), str(kT) + ":2", str(kT),
                               str(kT + 2 * kSecond) + ":6",
                               str(kT + 2 * kSecond)}));
    // nothing left at that instant
    EXPECT_EQ(release(kT + kSecond, kT + 3 * kSecond, {l}), 0);
    // at most what is there
    EXPECT_EQ(release(kT, kT + 3 * kSecond, {with_cost(l, 5)}), 1);
    EXPECT_EQ(zcard(kSl), 1);
    long long ttl = pttl(kSl);  // the newest commit's
    EXPECT_LE(ttl, 10000);
    EXPECT_GT(ttl, 9000);
    // all of them: no key left
    EXPECT_EQ(release(kT + 2 * kSecond, kT + 3 * kSecond, {l}), 1);
    EXPECT_EQ(dump(kSl), "(nil)");
}

// Entry names count on from the window's entries; a release shrinks that
// count, and a later commit at the same instant must still add its entries.
TEST_F(ReleaseTest, SlidingLogCommitAfterAReleaseAddsEveryEntry) {
    const Limit l = sl(kSl, 3, 10000);
    const std::int64_t t = kT + kSecond;
    // released from an earlier instant: the count at t drops to 1
    expect_one(kT, l, 1, 2, 10 * kSecond, 0);      // kT:1
    expect_one(t, l, 1, 1, 10 * kSecond, 0);       // t:2
    EXPECT_EQ(release(kT, t, {l}), 1);
    expect_one(t, l, 1, 1, 10 * kSecond, 0);       // t:2 taken: t:3
    EXPECT_EQ(zcard(kSl), 2);
    expect_one(t, l, 1, 0, 10 * kSecond, 0);
    expect_one(t, l, 0, 0, 10 * kSecond, 10 * kSecond);
    EXPECT_EQ(zcard(kSl), 3);
    // released at the same instant, cost 2 after it
    ASSERT_EQ(redis_->integer({"DEL", kSl}), 1);
    expect_one(t, l, 1, 2, 10 * kSecond, 0);       // t:1
    expect_one(t, l, 1, 1, 10 * kSecond, 0);       // t:2
    EXPECT_EQ(release(t, t, {l}), 1);              // one of them
    expect_one(t, with_cost(l, 2), 1, 0, 10 * kSecond, 0);
    EXPECT_EQ(zcard(kSl), 3);
    expect_one(t, l, 0, 0, 10 * kSecond, 10 * kSecond);
}

// 10 per 1 s in a bucket of 10: the reservation's tokens go back at the
// stored time; after another request, less what refilled since.
TEST_F(ReleaseTest, TokenBucketGivesTokensBackAtTheStoredTime) {
    const Limit l = tb(kTb, 10, 1000);
    Limit other = l;
    other.key = kTb + "b";
    expect_one(kT, with_cost(l, 4), 1, 6, 400000, 0);
    EXPECT_EQ(release(kT, kT + 50 * kMs, {with_cost(l, 4)}), 1);
    EXPECT_EQ(dump(kTb), "(nil)");  // full: as if it never came
    expect_one(kT, with_cost(l, 4), 1, 6, 400000, 0);
    EXPECT_EQ(release(kT, kT, {with_cost(l, 3)}), 1);
    EXPECT_EQ(get(kTb), "9:1700000000000000");
    EXPECT_GT(pttl(kTb), 0);

    // without the reservation the bucket, full, overflows while it refills:
    // 10 at +100 ms, 9 after the other request. With it: 6 + 1 - 1 = 6
    // there; the release gives back 4 less the 1 refilled since: 9 at
    // +100 ms (adding 4 would make 10, one more than without it)
    ASSERT_EQ(redis_->integer({"DEL", kTb}), 1);
    expect_one(kT, with_cost(l, 4), 1, 6, 400000, 0);
    expect_one(kT + 100 * kMs, l, 1, 6, 400000, 0);
    expect_one(kT + 100 * kMs, other, 1, 9, 100000, 0);
    EXPECT_EQ(get(kTb), "6:1700000000100000");
    EXPECT_EQ(release(kT, kT + 150 * kMs, {with_cost(l, 4)}), 1);
    EXPECT_EQ(get(kTb), "9:1700000000100000");
    EXPECT_EQ(get(other.key), "9:1700000000100000");
    long long ttl = pttl(kTb);  // full at +200 ms
    EXPECT_LE(ttl, 50);
    EXPECT_GT(ttl, 0);
    hold(l);
    hold(other);
    expect_as_if_never(l, other, kT + 150 * kMs);
    expect_one(kT + 150 * kMs, l, 1, 8, 150000, 0);
    expect_one(kT + 150 * kMs, with_cost(l, 10), 0, 8, 150000, 150000);

    // full by now: nothing held any more
    ASSERT_EQ(redis_->integer({"DEL", kTb}), 1);
    expect_one(kT, with_cost(l, 4), 1, 6, 400000, 0);
    EXPECT_EQ(release(kT, kT + 400 * kMs, {with_cost(l, 4)}), 0);
    EXPECT_EQ(get(kTb), "6:1700000000000000");
    // a state older than the reservation does not hold it
    EXPECT_EQ(release(kT + 1, kT + 2, {with_cost(l, 4)}), 0);
    EXPECT_EQ(get(kTb), "6:1700000000000000");
}

TEST_F(ReleaseTest, TokenBucketReleaseKeepsBackWhatRefilledSinceTheReservation) {
    // a bucket of 10 at 10 per 1 s holding 2 tokens at kT
    const Limit l = tb(kTb, 10, 1000);
    Limit other = l;
    other.key = kTb + "b";
    set(kTb, "2:" + str(kT));
    set(other.key, "2:" + str(kT));
    expect_one(kT, with_cost(l, 2), 1, 0, kSecond, 0);
    expect_one(kT + 100 * kMs, l, 1, 0, kSecond, 0);
    expect_one(kT + 100 * kMs, other, 1, 2, 800000, 0);
    // back: 2 less the 1 refilled since: 1 token where b has 2
    EXPECT_EQ(release(kT, kT + 150 * kMs, {with_cost(l, 2)}), 1);
    EXPECT_EQ(get(kTb), "1:1700000000100000");
    expect_not_more_generous(l, other, kT + 150 * kMs);
    const long long ttl = pttl(kTb);  // 9 tokens to refill at +100 ms: 850 ms
    EXPECT_LE(ttl, 850);
    EXPECT_GT(ttl, 400);
}

// 5 per 1 s, burst 2: one every 200 ms, 3 at once.
TEST_F(ReleaseTest, LeakyBucketTakesIntervalsOffTheTat) {
    const Limit l = lb(kLb, 5, 1000, 2);
    // at once: exact
    expect_one(kT, l, 1, 2, 200000, 0);
    expect_one(kT, with_cost(l, 2), 1, 0, 600000, 0);
    EXPECT_EQ(release(kT, kT, {with_cost(l, 2)}), 1);
    EXPECT_EQ(get(kLb), "1700000000200000");
    EXPECT_GT(pttl(kLb), 0);
    // idle before it, nothing in between: all of it, whenever
    ASSERT_EQ(redis_->integer({"DEL", kLb}), 1);
    expect_one(kT, with_cost(l, 2), 1, 1, 400000, 0);
    EXPECT_EQ(release(kT, kT + 150 * kMs, {with_cost(l, 2)}), 1);
    EXPECT_EQ(dump(kLb), "(nil)");  // idle: as if it never came
    // busy before it: the 150 ms are kept back
    set(kLb, str(kT + 200 * kMs));
    expect_one(kT, with_cost(l, 2), 1, 0, 600000, 0);
    EXPECT_EQ(release(kT, kT + 150 * kMs, {with_cost(l, 2)}), 1);
    EXPECT_EQ(get(kLb), str(kT + 350 * kMs));  // 200 ms without it
    // a fractional interval, at once: 3 per 1 s
    const Limit f = lb(kLb, 3, 1000, 2);
    ASSERT_EQ(redis_->integer({"DEL", kLb}), 1);
    expect_one(kT, f, 1, 2, 333334, 0);
    expect_one(kT, f, 1, 1, 666667, 0);
    EXPECT_EQ(release(kT, kT, {f}), 1);
    EXPECT_EQ(get(kLb).substr(0, 25), "1700000000333333.33333333");
    expect_one(kT, with_cost(f, 2), 1, 0, kSecond, 0);
}

// Without the reservation the bucket went idle, and another request
// restarted it later: its TAT is where the one with the reservation is.
// Taking the intervals off would let one more through.
TEST_F(ReleaseTest, LeakyBucketGivesNothingBackOnceABucketWithoutItRestarted) {
    const Limit l = lb(kLb, 5, 1000, 2);
    const Limit other = lb(kLb + "b", 5, 1000, 2);
    expect_one(kT, l, 1, 2, 200000, 0);                 // TAT +200 ms
    expect_one(kT + 300 * kMs, l, 1, 2, 200000, 0);     // TAT +500 ms
    expect_one(kT + 300 * kMs, other, 1, 2, 200000, 0);  // the same
    EXPECT_EQ(release(kT, kT + 350 * kMs, {l}), 0);
    EXPECT_EQ(get(kLb), "1700000000500000");
    hold(l);
    hold(other);
    for (std::int64_t at : {350 * kMs, 400 * kMs}) {
        expect_as_if_never(l, other, kT + at);
    }
}

// --- several limits, Redis TIME --------------------------------------------

TEST_F(ReleaseTest, SeveralLimitsInOneRelease) {
    const Limit f = fw("rrl:{c}:fw", 5, 1000, 0, 2),
                s = sl("rrl:{c}:sl", 5, 1000, 0, 2),
                t = tb("rrl:{c}:tb", 5, 1000, RRL_BURST_UNSET, 2);
    Result r = run(kR, {f, s, t});
    ASSERT_FALSE(r.error) << r.error_text;
    ASSERT_EQ(r.passed, 1);
    // f's state gone meanwhile: the two others are released
    ASSERT_EQ(redis_->integer({"DEL", f.key}), 1);
    EXPECT_EQ(release(r.now_us, kR + 1, {f, s, t}), 2);
    EXPECT_EQ(dump(f.key), "(nil)");
    EXPECT_EQ(dump(s.key), "(nil)");
    EXPECT_EQ(dump(t.key), "(nil)");
    EXPECT_EQ(release(r.now_us, kR + 1, {f, s, t}), 0);
    EXPECT_EQ(release(r.now_us, kR + 1, {}), 0);
}

TEST_F(ReleaseTest, EmptyTimeArgumentUsesRedisTime) {
    const Limit l = sl(kSl, 3, 10000, 0, 2);
    Result r = run(-1, {l});
    ASSERT_FALSE(r.error) << r.error_text;
    ASSERT_EQ(r.passed, 1);
    ASSERT_EQ(zcard(kSl), 2);
    EXPECT_EQ(release(r.now_us, -1, {l}), 1);
    EXPECT_EQ(dump(kSl), "(nil)");
    // a reservation time from the far past: nothing counts any more
    Result again = run(-1, {l});
    ASSERT_EQ(again.passed, 1);
    EXPECT_EQ(release(again.now_us - 10 * kSecond, -1, {l}), 0);
    EXPECT_EQ(zcard(kSl), 2);
}

// --- bad arguments ----------------------------------------------------------

void expect_error(const Reply& r, const std::string& text) {
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_NE(std::string(r->str, r->len).find(text), std::string::npos)
        << std::string(r->str, r->len);
}

TEST_F(ReleaseTest, BadArgumentsChangeNothing) {
    const std::string bad = "ERR redis_ratelimit: bad arguments";
    const Limit f = fw(kFw, 5, 1000, 0, 2), s = sl(kSl, 5, 1000, 0, 2);
    Result r = run(kR, {f, s});
    ASSERT_EQ(r.passed, 1);
    const std::string df = dump(kFw), ds = dump(kSl);
    const std::string at = str(kR), now = str(kR + 1);
    const std::vector<std::string> args_f = {"fixed_window", "5", "1000", "0", "2"};
    const std::vector<std::string> args_s = {"sliding_log", "5", "1000", "0", "2"};
    auto argv = [](std::vector<std::string> head,
                   const std::vector<std::vector<std::string>>& limits) {
        for (const auto& l : limits) head.insert(head.end(), l.begin(), l.end());
        return head;
    };
    // counts: 3 + 5 per key, exactly
    expect_error(evalsha({kFw}, argv({"release", at}, {args_f})), bad);
    expect_error(evalsha({kFw}, argv({"release", at, now, "x"}, {args_f})), bad);
    expect_error(evalsha({kFw, kSl}, argv({"release", at, now}, {args_f})), bad);
    expect_error(evalsha({kFw}, argv({"release", at, now}, {args_f, args_s})), bad);
    expect_error(evalsha({kFw}, {"release"}), bad);
    expect_error(evalsha({}, {"release", at}), bad);
    expect_error(evalsha({}, {}), bad);
    // times
    expect_error(evalsha({kFw}, argv({"release", "", now}, {args_f})), bad);
    expect_error(evalsha({kFw}, argv({"release", "soon", now}, {args_f})), bad);
    expect_error(evalsha({kFw}, argv({"release", at, "soon"}, {args_f})), bad);
    // numbers of the second limit: the first is not released either
    for (size_t i = 1; i < 5; i++) {
        std::vector<std::string> broken = args_s;
        broken[i] = "many";
        expect_error(evalsha({kFw, kSl}, argv({"release", at, now}, {args_f, broken})),
                     bad);
    }
    expect_error(
        evalsha({kFw, kSl},
                argv({"release", at, now},
                     {args_f, {"bogus_bucket", "5", "1000", "0", "2"}})),
        "ERR redis_ratelimit: unknown algorithm bogus_bucket");
    EXPECT_EQ(dump(kFw), df);
    EXPECT_EQ(dump(kSl), ds);
    // the check form rejects the same numbers instead of failing in Lua
    expect_error(evalsha({kFw}, {at, "fixed_window", "5", "soon", "0", "1"}), bad);
    EXPECT_EQ(dump(kFw), df);
    // and a well-formed release of both works
    Reply ok = evalsha({kFw, kSl}, argv({"release", at, now}, {args_f, args_s}));
    ASSERT_EQ(ok->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(ok->integer, 2);
    EXPECT_EQ(get(kFw), "1700000000:0");
    EXPECT_EQ(dump(kSl), "(nil)");
}

}  // namespace
