// rrl_deny_cache.h: which limits the deny cache serves, the tag of a
// Redis's configuration, and the answer for a limit from the key's entry:
// Redis's values while the entry applies, an idle key's otherwise, and an
// entry that has ended to drop.
#include "local/deny_cache.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "api/rrl_conf.h"
#include "api/rrl_deny_cache.h"
#include "api/rrl_engine.h"
#include "local/deny_entry.hpp"
#include "tests/support/call_limit.hpp"

namespace {

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kSent = 5000 * 1000 * kMs;

std::uint32_t tag_of(std::uint32_t tag, const std::string& field) {
    return rrl::deny_redis(tag, field.data(), field.size());
}

// 5r/s fixed_window with burst 2 (capacity 7) in Redis 7, of a cost
rrl_deny_limit_t fw5(std::uint64_t cost, std::uint32_t redis = 7) {
    return rrl::deny_limit(RRL_FIXED_WINDOW, 5, 1000, 2, redis, cost);
}

// fw5(cost)'s rejection learned at kSent: rejected for 500 ms
rrl_deny_entry_t rejection(std::uint64_t cost) {
    rrl_deny_limit_t l = fw5(cost);
    rrl_limit_result_t r{0, 0, 800 * kMs, 500 * kMs};
    rrl_deny_entry_t e{};
    EXPECT_EQ(rrl_deny_learn(kSent, kSent, &l, &r, &e), 1);
    return e;
}

TEST(DenyUsable, EveryLimitOutsideADryRunAndCombinedClusterZones) {
    EXPECT_EQ(rrl_deny_usable(0, 0, 0), 1);
    EXPECT_EQ(rrl_deny_usable(0, 0, 1), 1);  // one Redis: one call
    EXPECT_EQ(rrl_deny_usable(0, 1, 0), 1);  // a zone always alone
    EXPECT_EQ(rrl_deny_usable(0, 1, 1), 0);  // reservations given back
    EXPECT_EQ(rrl_deny_usable(1, 0, 0), 0);  // Redis counts every request
    EXPECT_EQ(rrl_deny_usable(1, 1, 0), 0);
    EXPECT_EQ(rrl_deny_usable(1, 0, 1), 0);
    EXPECT_EQ(rrl_deny_usable(1, 1, 1), 0);
    EXPECT_EQ(rrl_deny_usable(2, 0, 0), 0);  // any true value
}

TEST(DenyLimit, SetsEveryField) {
    rrl_deny_limit_t l =
        rrl::deny_limit(RRL_TOKEN_BUCKET, 10, 60000, 25, 0xdeadbeef, 3);
    EXPECT_EQ(l.algorithm, RRL_TOKEN_BUCKET);
    EXPECT_EQ(l.limit, 10u);
    EXPECT_EQ(l.period_ms, 60000u);
    EXPECT_EQ(l.burst, 25u);
    EXPECT_EQ(l.redis, 0xdeadbeefu);
    EXPECT_EQ(l.cost, 3u);
}

TEST(DenyLimit, PaddingIsZeroSoCopiesCompareEqualByBytes) {
    rrl_deny_limit_t a;
    rrl_deny_limit_t b;
    std::memset(&a, 0xaa, sizeof(a));
    std::memset(&b, 0x55, sizeof(b));
    a = rrl::deny_limit(RRL_SLIDING_WINDOW, 1, 2, 3, 4, 5);
    b = rrl::deny_limit(RRL_SLIDING_WINDOW, 1, 2, 3, 4, 5);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
}

TEST(DenyRedis, IsTheCrc32OfEachFieldsLengthAndBytes) {
    // zlib.crc32 of the little-endian 8-byte lengths and the bytes
    EXPECT_EQ(rrl::deny_redis(0, "", 0), 0x6522df69u);
    EXPECT_EQ(tag_of(0, "abc"), 0x38004f3du);
    EXPECT_EQ(tag_of(tag_of(0, "abc"), "127.0.0.1:6379"), 0xf15aba88u);
}

TEST(DenyRedis, SameFieldsSameTag) {
    std::uint32_t a = tag_of(tag_of(0, "10.0.0.1:6379"), "10.0.0.2:6379");
    std::uint32_t b = tag_of(tag_of(0, "10.0.0.1:6379"), "10.0.0.2:6379");
    EXPECT_EQ(a, b);
}

TEST(DenyRedis, FieldsCountWithTheirLengths) {
    EXPECT_NE(tag_of(tag_of(0, "a"), "bc"), tag_of(tag_of(0, "ab"), "c"));
    // an empty field (no sentinel name) is a field too
    EXPECT_NE(tag_of(tag_of(0, ""), "a"), tag_of(0, "a"));
}

TEST(DenyRedis, AnotherValueOrOrderIsAnotherTag) {
    std::int64_t db0 = 0;
    std::int64_t db1 = 1;
    EXPECT_NE(rrl::deny_redis(0, &db0, sizeof(db0)),
              rrl::deny_redis(0, &db1, sizeof(db1)));
    EXPECT_NE(tag_of(tag_of(0, "x:1"), "y:1"), tag_of(tag_of(0, "y:1"), "x:1"));
    EXPECT_NE(tag_of(0, "x:6379"), tag_of(0, "x:6380"));
}

TEST(DenyRedis, OfAnEngineIsItsModeDbSentinelNameThenAddresses) {
    rrl_engine_addr_t addrs[2] = {{"10.0.0.1", 6379, nullptr, "a:6379"},
                                  {"10.0.0.2", 6379, nullptr, "b:6379"}};
    rrl_engine_conf_t e;
    std::memset(&e, 0, sizeof(e));
    e.mode = RRL_SERVER_SENTINEL;
    e.db = 3;
    e.sentinel_name = "mymaster";
    e.sentinel_name_len = 8;

    std::uint32_t tag = rrl::deny_redis(0, &e.mode, sizeof(e.mode));
    tag = rrl::deny_redis(tag, &e.db, sizeof(e.db));
    tag = tag_of(tag_of(tag_of(tag, "mymaster"), "a:6379"), "b:6379");
    EXPECT_EQ(rrl::deny_redis_of(e, addrs, 2), tag);

    std::uint32_t one = rrl::deny_redis_of(e, addrs, 1);
    EXPECT_NE(one, tag);
    e.db = 4;
    EXPECT_NE(rrl::deny_redis_of(e, addrs, 2), tag);
}

// rrl::deny_answer()'s result as the 4 integers a script reply has a limit
int answer(const rrl_deny_entry_t* entry, const rrl_deny_limit_t& limit,
           std::int64_t now_us, std::int64_t* v) {
    rrl_limit_result_t r{9, 9, 9, 9};
    int rc = rrl::deny_answer(entry, limit, now_us, r);
    v[0] = r.passed;
    v[1] = r.remaining;
    v[2] = r.reset_after_us;
    v[3] = r.retry_after_us;
    return rc;
}

TEST(DenyAnswer, NoEntryIsAnIdleKey) {
    rrl_deny_limit_t l = fw5(1);
    std::int64_t v[RRL_REPLY_PER_LIMIT] = {9, 9, 9, 9};
    EXPECT_EQ(answer(nullptr, l, kSent, v), RRL_DENY_MISS);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[1], 7);  // the capacity, N + burst
    EXPECT_EQ(v[2], 0);
    EXPECT_EQ(v[3], 0);
}

TEST(DenyAnswer, IdleCapacityIsTheAlgorithms) {
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    rrl_deny_limit_t tb = rrl::deny_limit(RRL_TOKEN_BUCKET, 5, 1000, 20, 7, 1);
    rrl_deny_limit_t lb = rrl::deny_limit(RRL_LEAKY_BUCKET, 5, 1000, 4, 7, 1);
    rrl_deny_limit_t bad =
        rrl::deny_limit(RRL_ALGORITHM_COUNT, 5, 1000, 4, 7, 1);

    EXPECT_EQ(answer(nullptr, tb, kSent, v), RRL_DENY_MISS);
    EXPECT_EQ(v[1], 20);
    EXPECT_EQ(answer(nullptr, lb, kSent, v), RRL_DENY_MISS);
    EXPECT_EQ(v[1], 5);
    EXPECT_EQ(answer(nullptr, bad, kSent, v), RRL_DENY_MISS);
    EXPECT_EQ(v[1], 0);
}

TEST(DenyAnswer, AnEntryThatAppliesRejectsWithRedissValues) {
    rrl_deny_entry_t e = rejection(2);
    rrl_deny_limit_t l = fw5(3);  // a larger cost waits the window out too
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    std::int64_t expected[RRL_REPLY_PER_LIMIT];

    ASSERT_EQ(rrl::deny_applies(e, l, kSent + 100 * kMs, expected), 1);
    EXPECT_EQ(answer(&e, l, kSent + 100 * kMs, v), RRL_DENY_REJECTED);
    for (int i = 0; i < RRL_REPLY_PER_LIMIT; i++) {
        EXPECT_EQ(v[i], expected[i]) << i;
    }
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[3], 400 * kMs);
}

TEST(DenyAnswer, AnEntryThatDoesNotApplyIsKeptAndAsksRedis) {
    rrl_deny_entry_t e = rejection(2);
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    rrl_deny_limit_t smaller = fw5(1);
    rrl_deny_limit_t other_redis = fw5(2, 8);

    EXPECT_EQ(answer(&e, smaller, kSent + kMs, v), RRL_DENY_MISS);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[1], 7);
    EXPECT_EQ(answer(&e, other_redis, kSent + kMs, v), RRL_DENY_MISS);
    EXPECT_EQ(v[0], 1);
}

TEST(DenyAnswer, AnEntryEndsAtItsEndToTheMicrosecond) {
    rrl_deny_entry_t e = rejection(2);
    rrl_deny_limit_t l = fw5(2);
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    EXPECT_EQ(answer(&e, l, e.until_us - 1, v), RRL_DENY_REJECTED);
    EXPECT_EQ(v[3], 1);
    EXPECT_EQ(answer(&e, l, e.until_us, v), RRL_DENY_ENDED);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[1], 7);
    EXPECT_EQ(v[2], 0);
    EXPECT_EQ(v[3], 0);
    // whatever the request's limit: the entry is over for everyone
    rrl_deny_limit_t other = fw5(1, 8);
    EXPECT_EQ(answer(&e, other, e.until_us + 1, v), RRL_DENY_ENDED);
}

TEST(DenyReply, EachLimitAnsweredThenTheRequestDecidedOnTheResults) {
    rrl_deny_entry_t e = rejection(2);
    rrl_deny_limit_t l = fw5(2);
    rrl_limit_result_t results[2];
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    std::int64_t w[RRL_REPLY_PER_LIMIT];

    EXPECT_EQ(rrl_deny_answer(nullptr, &l, kSent + kMs, &results[0]),
              RRL_DENY_MISS);
    EXPECT_EQ(rrl_deny_answer(&e, &l, kSent + kMs, &results[1]),
              RRL_DENY_REJECTED);
    ASSERT_EQ(answer(nullptr, l, kSent + kMs, v), RRL_DENY_MISS);
    ASSERT_EQ(answer(&e, l, kSent + kMs, w), RRL_DENY_REJECTED);
    EXPECT_EQ(results[0].passed, v[0]);
    EXPECT_EQ(results[0].remaining, v[1]);
    EXPECT_EQ(results[1].passed, w[0]);
    EXPECT_EQ(results[1].retry_after_us, w[3]);

    // as a reply of Redis's with the same results would be decoded
    std::int64_t wall = 1700000000LL * 1000 * kMs;
    std::vector<std::int64_t> reply = {0, wall, v[0], v[1], v[2], v[3],
                                       w[0], w[1], w[2], w[3]};
    rrl_limit_result_t decoded[2];
    rrl_decision_t expected{}, decision{};
    ASSERT_EQ(rrl_test::reply_decode(reply.data(), reply.size(), 2, decoded,
                                     &expected),
              RRL_OK);
    decision = rrl::decide_results(results, 2, wall);
    EXPECT_EQ(decision.passed, 0);
    EXPECT_EQ(decision.now_us, wall);
    EXPECT_EQ(decision.reported, 1u);
    EXPECT_EQ(std::memcmp(&decision, &expected, sizeof(decision)), 0);
}

}  // namespace
