// Settlements (settle.hpp): the value's rule, the settle form's arguments,
// and Settlement::start() on the engine: one call in the turn's batches
// (with the checks of the same turn), settled() once on every path.
#include "lease/settle.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/wrap/capi.hpp"
#include "tests/support/call_limit.hpp"
#include "tests/engine/engine_fixture.hpp"

namespace {

using rrl_test::Argv;
using rrl_test::EngineTest;
using rrl_test::FakeConn;
using rrl_test::TestCall;

const std::string sha1(40, 'a');

// settle_value(), *a written only when it is one
bool value(std::string_view text, uint64_t* a) {
    auto v = rrl::settle_value(text);
    if (v) *a = *v;
    return v.has_value();
}

TEST(SettleValue, DigitsAlone) {
    uint64_t a = 99;
    EXPECT_TRUE(value("30", &a));
    EXPECT_EQ(a, 30u);
    EXPECT_TRUE(value("0", &a));
    EXPECT_EQ(a, 0u);
    EXPECT_TRUE(value("007", &a));
    EXPECT_EQ(a, 7u);
    EXPECT_TRUE(value("1000000000000", &a));
    EXPECT_EQ(a, RRL_SETTLE_MAX);
    EXPECT_TRUE(value("0000000000000000000000000042", &a));
    EXPECT_EQ(a, 42u);
}

TEST(SettleValue, NothingElse) {
    uint64_t a = 99;
    for (const char* bad :
         {"", "-1", "+1", " 1", "1 ", "1.5", "1e3", "0x10", "abc", "12a",
          "1000000000001", "18446744073709551616", "99999999999999999999999"}) {
        EXPECT_FALSE(value(bad, &a)) << bad;
    }
    EXPECT_EQ(a, 99u);  // untouched
    EXPECT_FALSE(value({}, &a));
    const char nul[] = {'1', '\0', '2'};
    EXPECT_FALSE(value({nul, 3}, &a));
    EXPECT_EQ(a, 99u);
}

// A number over RRL_SETTLE_MAX is told apart from no number, for the log
// (issue 25).
TEST(SettleValue, OverTheMaximumIsToldApart) {
    uint64_t a = 99;
    for (const char* over : {"1000000000001", "18446744073709551616",
                             "99999999999999999999999", "0001000000000001"}) {
        EXPECT_FALSE(value(over, &a)) << over;
        EXPECT_TRUE(rrl::settle_value_over(over)) << over;
        EXPECT_STREQ(rrl::settle_why(over).data(),
                     "over the maximum of 1000000000000");
    }
    for (const char* bad : {"", "-1", "1.5", "12a", "1e13", " 1000000000001"}) {
        EXPECT_FALSE(value(bad, &a)) << bad;
        EXPECT_FALSE(rrl::settle_value_over(bad)) << bad;
        EXPECT_STREQ(rrl::settle_why(bad).data(), "not a number");
    }
    EXPECT_STREQ(rrl::settle_why({}).data(), "not a number");
    EXPECT_STREQ(rrl::settle_why("42").data(), "");
    EXPECT_EQ(a, 99u);
}

// settle_plan(): which limits settle, A, T, and what each counts.
rrl_call_limit_t charged(uint64_t e, const char* key = "k") {
    rrl_call_limit_t l =
        rrl_test::call_limit("z", RRL_FIXED_WINDOW, 5, 60000, 0);
    l.cost = e;
    l.settle_at_us = 777;  // a lease decision's taken_at_us
    rrl_test::set_key(l, key);
    return l;
}

int plan(unsigned status, int leased, const rrl_call_limit_t& c,
         const char* text, rrl_call_limit_t* out) {
    rrl_call_limit_t zone =
        rrl_test::call_limit("z", RRL_FIXED_WINDOW, 10, 1000, 0);
    return rrl::settle_plan(status, leased != 0, 5000, zone, c,
                            text == nullptr ? std::string_view{} : text, *out);
}

TEST(SettlePlan, SentWithTheZonesNumbersAndT) {
    rrl_call_limit_t out{};
    rrl_call_limit_t c = charged(100);
    ASSERT_EQ(plan(RRL_STATUS_PASSED, 0, c, "30", &out), RRL_SETTLE_SEND);
    EXPECT_EQ(out.limit, 10u);  // the zone's, not the override's
    EXPECT_EQ(out.period_ms, 1000);
    EXPECT_EQ(out.cost, 100u);
    EXPECT_EQ(out.settle_actual, 30u);
    EXPECT_EQ(out.settle_at_us, 5000);  // the reply's now
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.key), out.key_len),
              "k");
    // decided from a lease: T is the lease's
    ASSERT_EQ(plan(RRL_STATUS_DELAYED, 1, c, "500", &out), RRL_SETTLE_SEND);
    EXPECT_EQ(out.settle_at_us, 777);
    EXPECT_EQ(out.settle_actual, 500u);
    EXPECT_EQ(plan(RRL_STATUS_DELAYED_DRY_RUN, 0, c, "0", &out),
              RRL_SETTLE_SEND);
}

TEST(SettlePlan, NothingToSendOrNoNumber) {
    rrl_call_limit_t out{};
    rrl_call_limit_t c = charged(100);
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "100", &out), RRL_SETTLE_SETTLED);
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "", &out), RRL_SETTLE_FAILED);
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, nullptr, &out), RRL_SETTLE_FAILED);
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "12 tokens", &out),
              RRL_SETTLE_FAILED);
}

TEST(SettlePlan, OnlyWhatRedisOrALeaseTook) {
    rrl_call_limit_t out{};
    rrl_call_limit_t c = charged(100);
    for (unsigned status :
         {0u, unsigned(RRL_STATUS_REJECTED),
          unsigned(RRL_STATUS_REJECTED_DRY_RUN),
          unsigned(RRL_STATUS_FAILED_OPEN), unsigned(RRL_STATUS_FAILED_CLOSED),
          unsigned(RRL_STATUS_FAILED_LOCAL)}) {
        EXPECT_EQ(plan(status, 0, c, "30", &out), RRL_SETTLE_NONE) << status;
    }
    // an empty key was not limited
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, charged(100, ""), "30", &out),
              RRL_SETTLE_NONE);
}

// R1 (issue 25): a request charged while its key's override was
// "unlimited" took nothing: nothing to settle, nothing sent (the script
// would settle it under the override in force then, e.g. a debt of A - E
// once the override is deleted). One charged under a rate, or none, is.
TEST(SettlePlan, NothingWhenChargedUnderUnlimited) {
    rrl_call_limit_t out{};
    rrl_call_limit_t c = charged(100);
    c.overrides = 1;
    c.override = RRL_OVERRIDE_UNLIMITED;
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "500", &out), RRL_SETTLE_SETTLED);
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "0", &out), RRL_SETTLE_SETTLED);
    // no number: as ever
    EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "x", &out), RRL_SETTLE_FAILED);
    for (int kind :
         {RRL_OVERRIDE_NONE, RRL_OVERRIDE_RATE, RRL_OVERRIDE_INVALID}) {
        c.override = kind;
        EXPECT_EQ(plan(RRL_STATUS_PASSED, 0, c, "500", &out), RRL_SETTLE_SEND)
            << kind;
    }
}

rrl_call_limit_t settling(const char* zone, int algorithm, uint64_t e,
                          uint64_t a, int64_t t, const char* key) {
    rrl_call_limit_t l = rrl_test::call_limit(zone, algorithm, 10, 1000, 0);
    l.cost = e;
    l.settle_actual = a;
    l.settle_at_us = t;
    rrl_test::set_key(l, key);
    return l;
}

// settle_args() of limits, in settle_args_size()'s room; rc RRL_ERROR:
// refused (a T below 0 throws)
std::vector<std::string> build(const std::vector<rrl_call_limit_t>& limits,
                               int rc = RRL_OK) {
    size_t n = limits.size();
    rrl::CallLimits l;
    EXPECT_TRUE(rrl::to_call_limits(limits.data(), n, l));
    size_t size = rrl::settle_args_size(l.data(), n);
    std::string buf;
    buf.reserve(size);
    std::vector<std::string> args;
    if (rc != RRL_OK) {
        EXPECT_THROW(rrl::settle_args(sha1, l.data(), n, buf),
                     std::invalid_argument);
        return args;
    }
    rrl::CallArgs a = rrl::settle_args(sha1, l.data(), n, buf);
    EXPECT_LE(buf.size(), size);
    for (std::string_view v : a) {
        EXPECT_GE(v.data(), buf.data());
        EXPECT_LE(v.data() + v.size(), buf.data() + buf.size());
        args.emplace_back(v);
    }
    return args;
}

// a check's layout: ARGV[1] "settle", each cost "E:A:T"; the algorithms
// named as a check names them (suffixes included)
TEST(SettleArgs, TheLayoutOfACheckWithItsFormAndCosts) {
    rrl_call_limit_t lease =
        settling("L", RRL_TOKEN_BUCKET, 2000, 30, 1700000000123456, "y");
    lease.lease = 10;
    lease.lease_want = 5000;  // a check's field: not the settlement's
    lease.lease_back = 7;
    rrl_call_limit_t over =
        settling("O", RRL_SLIDING_LOG, 1, 0, 1700000000000001, "z");
    over.overrides = 1;
    auto args =
        build({settling("A", RRL_FIXED_WINDOW, 100, 500, 1700000000000000, "x"),
               lease, over});
    std::vector<std::string> want = {"EVALSHA",
                                     sha1,
                                     "3",
                                     "rrl:{A:x}:fw",
                                     "rrl:{L:y}:tb",
                                     "rrl:{O:z}:sl",
                                     "settle",
                                     "fixed_window",
                                     "10",
                                     "1000",
                                     "0",
                                     "100:500:1700000000000000",
                                     "token_bucket" RRL_LEASE_SUFFIX,
                                     "10",
                                     "1000",
                                     "0",
                                     "2000:30:1700000000123456",
                                     "sliding_log" RRL_OVERRIDES_SUFFIX,
                                     "10",
                                     "1000",
                                     "0",
                                     "1:0:1700000000000001"};
    EXPECT_EQ(args, want);
    EXPECT_EQ(args[RRL_CALL_ARG(3, 1, RRL_CALL_COST)],
              "2000:30:1700000000123456");
}

TEST(SettleArgs, TheLargestNumbersFit) {
    rrl_call_limit_t l =
        settling("Z", RRL_LEAKY_BUCKET, UINT64_MAX, UINT64_MAX, INT64_MAX, "k");
    l.limit = l.period_ms = l.burst = UINT64_MAX;
    auto args = build({l, l});
    ASSERT_EQ(args.size(), RRL_CALL_ARGC(2));
    EXPECT_EQ(args[RRL_CALL_ARG(2, 1, RRL_CALL_COST)],
              "18446744073709551615:18446744073709551615:9223372036854775807");
}

// R1 (issue 25): an overrides=on limit's field carries the limit its
// charge applied (as decoded: the override's rate, else the zone's), so
// that the script settles with it whatever is in force later.
TEST(SettleArgs, AnOverridesLimitCarriesTheChargesLimit) {
    rrl_call_limit_t out{};
    rrl_call_limit_t c = charged(100);
    c.overrides = 1;
    c.override = RRL_OVERRIDE_RATE;
    c.limit = 50;
    c.period_ms = 3600000;
    c.burst = 7;
    rrl_call_limit_t zone =
        rrl_test::call_limit("z", RRL_FIXED_WINDOW, 10, 1000, 0);
    zone.overrides = 1;
    ASSERT_EQ(
        rrl::settle_plan(RRL_STATUS_PASSED, false, 5000, zone, c, "30", out),
        RRL_SETTLE_SEND);
    EXPECT_EQ(out.limit, 10u);  // the zone's: the batch names it
    EXPECT_EQ(out.settle_limit, 50u);
    EXPECT_EQ(out.settle_period_ms, 3600000u);
    EXPECT_EQ(out.settle_burst, 7u);
    auto args = build({out, out});
    EXPECT_EQ(args[RRL_CALL_ARG(2, 1, RRL_CALL_COST)],
              "100:30:5000:50:3600000:7");
    // the largest numbers fit
    out.settle_limit = out.settle_period_ms = out.settle_burst = UINT64_MAX;
    out.cost = out.settle_actual = UINT64_MAX;
    out.settle_at_us = INT64_MAX;
    args = build({out, out});
    ASSERT_EQ(args.size(), RRL_CALL_ARGC(2));
    // no overrides: none carried
    c.overrides = 0;
    zone.overrides = 0;
    ASSERT_EQ(
        rrl::settle_plan(RRL_STATUS_PASSED, false, 5000, zone, c, "30", out),
        RRL_SETTLE_SEND);
    EXPECT_EQ(out.settle_limit, 0u);
    EXPECT_EQ(build({out})[RRL_CALL_ARG(1, 0, RRL_CALL_COST)], "100:30:5000");
}

TEST(SettleArgs, BadInput) {
    // T below 0: no time of Redis's
    build({settling("A", RRL_FIXED_WINDOW, 1, 2, -1, "x")}, RRL_ERROR);
    rrl_call_limit_t bad = settling("A", RRL_FIXED_WINDOW, 1, 2, 0, "x");
    bad.algorithm = RRL_ALGORITHM_COUNT;
    rrl::CallLimits l;
    EXPECT_FALSE(rrl::to_call_limits(&bad, 1, l));
}

// What settled() was given, copied: it runs once.
struct Settled {
    int calls = 0;
    bool results = false;
    std::vector<rrl_limit_result_t> limits;
    std::vector<std::string> keys;
    std::vector<uint64_t> actual;
    std::vector<const char*> redis_keys;  // as given: pointers, not read
    rrl_decision_t decision{};
    int64_t redis_now = 0, sent = 0;
    std::string error;

    static void fn(void* arg, const rrl_call_limit_t* limits, size_t n,
                   const rrl_limit_result_t* results,
                   const rrl_decision_t* decision, int64_t redis_now_us,
                   int64_t sent_us, const char* error, size_t error_len) {
        auto* s = static_cast<Settled*>(arg);
        s->calls++;
        s->results = results != nullptr;
        for (size_t i = 0; i < n; i++) {
            s->keys.emplace_back(reinterpret_cast<const char*>(limits[i].key),
                                 limits[i].key_len);
            s->actual.push_back(limits[i].settle_actual);
            s->redis_keys.push_back(limits[i].redis_key);
            if (results != nullptr) s->limits.push_back(results[i]);
        }
        if (decision != nullptr) s->decision = *decision;
        s->redis_now = redis_now_us;
        s->sent = sent_us;
        s->error.assign(error == nullptr ? "" : error, error_len);
    }
};

class SettleEngine : public EngineTest {
   protected:
    // limits of the harness's zone (TestCall's): sliding_window 10r/s
    int settle(std::vector<std::string> keys, Settled& s,
               const void* zone = nullptr) {
        keys_ = std::move(keys);
        std::vector<rrl_call_limit_t> limits;
        std::vector<const void*> zones;
        for (const std::string& k : keys_) {
            rrl_call_limit_t l =
                settling("z", RRL_SLIDING_WINDOW, 100, 30, kT, k.c_str());
            limits.push_back(l);
            zones.push_back(zone != nullptr ? zone : &zone_);
        }
        int rc =
            settle_on(&rrl::capi::engine_of(engine.get()), rrl_script_sha1(),
                      limits.data(), zones.data(), limits.size(), s);
        // the caller's copies go now: the settlement keeps its own
        for (std::string& k : keys_) k.assign(k.size(), '#');
        return rc;
    }

    // Settlement::start(), RRL_OK: made
    static int settle_on(rrl::engine::Engine* e, std::string_view sha,
                         const rrl_call_limit_t* limits,
                         const void* const* zones, size_t n, Settled& s,
                         int64_t sent = 42) {
        return rrl::Settlement::start(e, sha, limits, zones, n, sent,
                                      Settled::fn, &s)
                   ? RRL_OK
                   : RRL_ERROR;
    }

    static constexpr int64_t kT = 1699999999000000;
    int zone_ = 0;
    std::vector<std::string> keys_;
};

TEST_F(SettleEngine, SettledOnceWithTheReply) {
    start();
    Settled s;
    ASSERT_EQ(settle({"a", "b"}, s), RRL_OK);
    EXPECT_EQ(s.calls, 0);  // later, from the loop
    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));
    loop.run(5);
    EXPECT_EQ(s.calls, 1);
    ASSERT_TRUE(s.results);
    ASSERT_EQ(s.limits.size(), 2u);
    EXPECT_EQ(s.limits[1].remaining, rrl_test::kRemaining);
    EXPECT_EQ(s.redis_now, rrl_test::kNow);
    EXPECT_EQ(s.decision.now_us, rrl_test::kNow);
    EXPECT_EQ(s.sent, 42);
    EXPECT_EQ(s.keys, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(s.actual, (std::vector<uint64_t>{30, 30}));
    EXPECT_EQ(redis.releases(), 0u);

    Argv batch = last_batch();
    EXPECT_EQ(rrl_test::batch_requests(batch),
              (std::vector<Argv>{{"rrl:{z:a}:sw", "rrl:{z:b}:sw"}}));
    EXPECT_NE(std::find(batch.begin(), batch.end(), "s2"), batch.end());
    EXPECT_NE(
        std::find(batch.begin(), batch.end(), "100:30:" + std::to_string(kT)),
        batch.end());
}

// A request's Redis keys live in its pool, which is gone by the reply: the
// call holds its own copy, and settled() gets no pointer to the old ones.
TEST_F(SettleEngine, KeepsNoPointerToTheRequestsRedisKeys) {
    start();
    Settled s;
    std::string pool_key = "rrl:{z:a}:sw";
    rrl_call_limit_t l = settling("z", RRL_SLIDING_WINDOW, 100, 30, kT, "a");
    l.redis_key = pool_key.data();
    l.redis_key_len = pool_key.size();
    const void* zone = &zone_;
    ASSERT_EQ(settle_on(&rrl::capi::engine_of(engine.get()), rrl_script_sha1(),
                        &l, &zone, 1, s),
              RRL_OK);
    pool_key.assign(pool_key.size(), '#');  // the pool is gone

    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));
    ASSERT_TRUE(s.results);
    EXPECT_EQ(s.redis_keys, (std::vector<const char*>{nullptr}));
    EXPECT_EQ(rrl_test::batch_requests(last_batch()),
              (std::vector<Argv>{{"rrl:{z:a}:sw"}}));
}

// The "nobody waits": a settlement rides in the batch of the
// checks of its turn, one EVALSHA, its zone named once.
TEST_F(SettleEngine, RidesInTheSameBatchAsTheTurnsChecks) {
    start();
    TestCall a({"rrl:{z:a}:sw"}), b({"rrl:{z:b}:sw"});
    Settled s;
    ASSERT_TRUE(a.start(engine.get()));
    ASSERT_EQ(settle({"c"}, s, a.zones[0]), RRL_OK);
    ASSERT_TRUE(b.start(engine.get()));
    ASSERT_TRUE(finish(a) && finish(b));
    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));

    ASSERT_EQ(redis.count("EVALSHA"), 1u);
    ASSERT_EQ(redis.batches(), 1u);
    Argv batch = last_batch();
    EXPECT_EQ(rrl_test::batch_requests(batch),
              (std::vector<Argv>{
                  {"rrl:{z:a}:sw"}, {"rrl:{z:c}:sw"}, {"rrl:{z:b}:sw"}}));
    size_t n = 3;
    EXPECT_EQ(batch[3 + n + 2], "1");  // one zone
    // the entries: "1" zone cost, "s1" zone "E:A:T", "1" zone cost
    std::vector<std::string> entries(batch.end() - 9, batch.end());
    EXPECT_EQ(entries, (std::vector<std::string>{"1", "1", "1", "s1", "1",
                                                 "100:30:" + std::to_string(kT),
                                                 "1", "1", "1"}));
    EXPECT_TRUE(a.passed());
    EXPECT_TRUE(b.passed());
    ASSERT_TRUE(s.results);
    EXPECT_EQ(s.calls, 1);
}

TEST_F(SettleEngine, AnErrorReplyDropsIt) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return rrl_test::is_batch(a) ? std::string("-ERR boom\r\n")
                                     : rrl_test::redis_reply(a);
    };
    Settled s;
    ASSERT_EQ(settle({"k"}, s), RRL_OK);
    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));
    loop.run(5);
    EXPECT_EQ(s.calls, 1);
    EXPECT_FALSE(s.results);
    EXPECT_NE(s.error.find("boom"), std::string::npos) << s.error;
    EXPECT_EQ(s.keys, (std::vector<std::string>{"k"}));
}

// a batch's entry Redis failed: -1 for passed and every integer
TEST_F(SettleEngine, AnEntryRedisFailedDropsIt) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        if (!rrl_test::is_batch(a)) return rrl_test::redis_reply(a);
        return rrl_test::array({rrl_test::integer(-1),
                                rrl_test::integer(rrl_test::kNow),
                                rrl_test::integer(-1), rrl_test::integer(-1),
                                rrl_test::integer(-1), rrl_test::integer(-1)});
    };
    Settled s;
    ASSERT_EQ(settle({"k"}, s), RRL_OK);
    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));
    EXPECT_FALSE(s.results);
    EXPECT_EQ(s.error, "Redis failed it");
    EXPECT_FALSE(loop.logged("unexpected script reply"));
}

TEST_F(SettleEngine, AReplyNotTheScriptsDropsIt) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        if (!rrl_test::is_batch(a)) return rrl_test::redis_reply(a);
        return rrl_test::array({rrl_test::integer(1),
                                rrl_test::integer(rrl_test::kNow),
                                rrl_test::integer(1), rrl_test::integer(-5),
                                rrl_test::integer(0), rrl_test::integer(0)});
    };
    Settled s;
    ASSERT_EQ(settle({"k"}, s), RRL_OK);
    ASSERT_TRUE(loop.run_until([&] { return s.calls > 0; }));
    EXPECT_FALSE(s.results);
    EXPECT_EQ(s.error, "an unexpected reply");
}

TEST_F(SettleEngine, TimedOutOnce) {
    start();
    redis.handler = rrl_test::blackhole_batches;
    Settled s;
    ASSERT_EQ(settle({"k"}, s), RRL_OK);
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    loop.advance(200);
    EXPECT_EQ(s.calls, 1);
    EXPECT_FALSE(s.results);
    EXPECT_EQ(s.error, "timed out after 200 ms");
    redis.last_open()->send(rrl_test::pass_reply(last_batch()));
    loop.run(10);
    EXPECT_EQ(s.calls, 1);
}

TEST_F(SettleEngine, NotMadeAtOnce) {
    conf.conf.max_parked = 1;
    start();
    redis.handler = rrl_test::blackhole_batches;
    TestCall a({"a"});
    ASSERT_TRUE(a.start(engine.get()));
    Settled s;
    EXPECT_EQ(settle({"k"}, s), RRL_ERROR);
    EXPECT_EQ(s.calls, 1);  // at once
    EXPECT_FALSE(s.results);
    EXPECT_EQ(s.error, "");  // not made
    EXPECT_EQ(s.keys, (std::vector<std::string>{"k"}));
    EXPECT_EQ(s.sent, 42);
    loop.advance(200);
    EXPECT_EQ(s.calls, 1);
}

TEST_F(SettleEngine, BadInputIsNotMadeEither) {
    start();
    Settled none;
    EXPECT_EQ(settle({}, none), RRL_ERROR);
    EXPECT_EQ(none.calls, 1);
    EXPECT_FALSE(none.results);

    Settled no_engine;
    rrl_call_limit_t one = settling("z", RRL_FIXED_WINDOW, 1, 2, 3, "k");
    const void* z = &zone_;
    EXPECT_EQ(settle_on(nullptr, "sha", &one, &z, 1, no_engine, 7), RRL_ERROR);
    EXPECT_EQ(no_engine.calls, 1);

    Settled bad;
    rrl_call_limit_t l = settling("z", RRL_FIXED_WINDOW, 1, 2, -1, "k");
    const void* zone = &zone_;
    EXPECT_EQ(settle_on(&rrl::capi::engine_of(engine.get()), "sha", &l, &zone,
                        1, bad, 7),
              RRL_ERROR);
    EXPECT_EQ(bad.calls, 1);
    EXPECT_EQ(bad.keys, (std::vector<std::string>{"k"}));
    loop.run(5);
    EXPECT_EQ(redis.batches(), 0u);
    EXPECT_EQ(bad.calls, 1);
}

}  // namespace
