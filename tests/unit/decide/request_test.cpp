// A request (decide/request.hpp): its limits built once from their zones',
// in one block of the caller's memory, and the reply, results and decision
// read and written there.
#include "decide/request.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "script/cost.hpp"
#include "script/key.hpp"
#include "tests/support/call_limit.hpp"

namespace {

// where call_limit() writes a limit's Redis key
char redis_key_buf[1024];

rrl_call_limit_t zone_of(const char* name, int algorithm, uint64_t n,
                         uint64_t period_ms, uint64_t burst) {
    return rrl_test::call_limit(name, algorithm, n, period_ms, burst);
}

// a request in memory of its own, as the shim's pool gives it
struct Made {
    explicit Made(std::size_t capacity)
        : memory(rrl::Request::bytes(capacity) / 8 + 1),
          request(*rrl::Request::make(memory.data(), capacity)) {}
    std::vector<std::uint64_t> memory;
    rrl::Request& request;
    std::vector<std::string> keys;  // Redis keys, one buffer a limit

    bool add(const rrl_call_limit_t& zone, const char* key,
             std::uint64_t cost = 1) {
        keys.emplace_back(rrl::key_max_len(zone.zone_len), '\0');
        return request.add(&zone, zone, cost, nullptr, key, RRL_DELAY_NONE,
                           keys.back().data());
    }
};

}  // namespace

TEST(CallLimit, TheZonesWithTheRequestsCostKeyAndDelay) {
    auto zone = zone_of("A", RRL_TOKEN_BUCKET, 5, 1000, 7);
    zone.overrides = 1;
    zone.lease = 20;

    rrl_call_limit_t l =
        rrl::call_limit(zone, 3, nullptr, "client", 250, redis_key_buf);

    EXPECT_EQ(std::string(l.zone, l.zone_len), "A");
    EXPECT_EQ(l.algorithm, RRL_TOKEN_BUCKET);
    EXPECT_EQ(l.limit, 5u);
    EXPECT_EQ(l.period_ms, 1000u);
    EXPECT_EQ(l.burst, 7u);
    EXPECT_EQ(l.zone_limit, 5u);
    EXPECT_EQ(l.zone_period_ms, 1000u);
    EXPECT_EQ(l.zone_burst, 7u);
    EXPECT_EQ(l.overrides, 1);
    EXPECT_EQ(l.lease, 20u);
    EXPECT_EQ(l.cost, 3u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(l.key), l.key_len),
              "client");
    EXPECT_EQ(std::string(l.redis_key, l.redis_key_len),
              rrl::build_key("A", *rrl::algorithm(RRL_TOKEN_BUCKET), "client"));
    EXPECT_EQ(l.delay, 250u);
    EXPECT_EQ(l.lease_want, 0u);
    EXPECT_EQ(l.settle_actual, 0u);
}

TEST(CallLimit, ACostValueIsParsedAsCostEqualsVarIs) {
    auto zone = zone_of("A", RRL_FIXED_WINDOW, 5, 1000, 0);

    const char* texts[] = {"4", "", "x", "-1", "0", "2000000001"};
    for (const char* text : texts) {
        std::string_view t(text);
        rrl_call_limit_t l =
            rrl::call_limit(zone, 9, &t, "k", RRL_DELAY_NONE, redis_key_buf);
        EXPECT_EQ(l.cost, rrl::request_cost(t)) << text;
        EXPECT_NE(l.cost, 9u) << text;
        EXPECT_EQ(l.delay, RRL_DELAY_NONE);
    }
}

TEST(CallLimit, AnUnknownAlgorithmHasNoRedisKey) {
    auto zone = zone_of("A", 99, 5, 1000, 0);
    rrl_call_limit_t l =
        rrl::call_limit(zone, 1, nullptr, "k", RRL_DELAY_NONE, redis_key_buf);
    EXPECT_EQ(l.redis_key_len, 0u);
}

TEST(Request, HoldsItsLimitsTheirZonesAndAReplyAsWideAsTheirs) {
    auto a = zone_of("A", RRL_FIXED_WINDOW, 5, 1000, 0);
    auto b = zone_of("B", RRL_TOKEN_BUCKET, 5, 1000, 8);
    b.overrides = 1;
    auto c = zone_of("C", RRL_SLIDING_WINDOW, 5, 1000, 0);
    c.lease = 10;
    Made m(3);

    EXPECT_EQ(m.request.size(), 0u);
    EXPECT_EQ(m.request.reply().capacity, size_t{RRL_REPLY_HEADER});
    EXPECT_EQ(m.request.redis_now_us(), 0);
    EXPECT_FALSE(m.request.has_lease());

    ASSERT_TRUE(m.add(a, "x", 2));
    ASSERT_TRUE(m.add(b, "y"));
    ASSERT_TRUE(m.add(c, "z"));
    EXPECT_FALSE(m.add(a, "full"));

    EXPECT_EQ(m.request.size(), 3u);
    EXPECT_EQ(m.request.limits()[0].cost, 2u);
    EXPECT_EQ(std::string(m.request.limits()[2].zone, 1), "C");
    EXPECT_EQ(m.request.zones()[0], &a);
    EXPECT_EQ(m.request.zones()[1], &b);
    EXPECT_TRUE(m.request.has_lease());
    EXPECT_EQ(m.request.reply().capacity,
              rrl_test::reply_values(m.request.limits(), 3));
    EXPECT_EQ(m.request.reply().capacity,
              size_t{RRL_REPLY_HEADER + 4 + (4 + RRL_REPLY_OVERRIDE) +
                     (4 + RRL_REPLY_LEASE)});
    EXPECT_EQ(m.request.renewals()[2], 0u);
    EXPECT_EQ(m.request.lease_entries()[2], nullptr);
}

TEST(Request, BytesGrowWithCapacityAndAnEmptyOneIsValid) {
    EXPECT_LT(rrl::Request::bytes(1), rrl::Request::bytes(8));
    EXPECT_EQ(rrl::Request::bytes(0) % 8, 0u);
    Made m(0);
    EXPECT_EQ(m.request.size(), 0u);
    EXPECT_EQ(m.request.delay_us(1), 0);
    EXPECT_EQ(m.request.override_message(), "");
}

TEST(Request, DecodesRedisReplyIntoResultsAndDecision) {
    auto a = zone_of("A", RRL_FIXED_WINDOW, 5, 1000, 2);
    auto b = zone_of("B", RRL_TOKEN_BUCKET, 5, 1000, 8);
    Made m(2);
    m.add(a, "k");
    m.add(b, "k");

    const std::int64_t v[] = {0, 1000000, 1, 2, 10, 0, 0, 0, 700, 700};
    rrl_engine_result_t& reply = m.request.reply();
    std::memcpy(reply.values, v, sizeof(v));
    reply.nvalues = 10;

    ASSERT_TRUE(m.request.decode());
    EXPECT_EQ(m.request.redis_now_us(), 1000000);
    EXPECT_EQ(m.request.results()[0].passed, 1);
    EXPECT_EQ(m.request.results()[1].passed, 0);
    EXPECT_EQ(m.request.decision().passed, 0);
    EXPECT_EQ(m.request.decision().reported, 1u);

    reply.values[7] = 9;  // more than the bucket holds: not the script's
    EXPECT_FALSE(m.request.decode());
    reply.nvalues = 3;  // malformed
    EXPECT_FALSE(m.request.decode());
}

TEST(Request, DecodesTheLocalZonesAnswerOfFourALimit) {
    auto a = zone_of("A", RRL_FIXED_WINDOW, 5, 1000, 0);
    a.overrides = 1;  // the local answer has no override's integers
    Made m(1);
    m.add(a, "k");

    const std::int64_t v[] = {1, 2000000, 1, 4, 10, 0};
    std::memcpy(m.request.reply().values, v, sizeof(v));
    m.request.reply().nvalues = 6;

    ASSERT_TRUE(m.request.decode_local());
    EXPECT_EQ(m.request.results()[0].remaining, 4);
    EXPECT_EQ(m.request.decision().passed, 1);

    m.request.reply().nvalues = 5;
    EXPECT_FALSE(m.request.decode_local());
}

TEST(Request, DecidesOnResultsWrittenDirectly) {
    auto a = zone_of("A", RRL_FIXED_WINDOW, 5, 1000, 0);
    Made m(2);
    m.add(a, "x");
    m.add(a, "y");

    m.request.results()[0] = {1, 3, 10, 0};
    m.request.results()[1] = {0, 0, 2000, 2000};
    m.request.decide_at(5000000);

    EXPECT_EQ(m.request.decision().passed, 0);
    EXPECT_EQ(m.request.decision().reported, 1u);
    EXPECT_EQ(m.request.decision().now_us, 5000000);
}

TEST(Request, DelaysOnlyAPassAndByItsLeakyBucketLimits) {
    auto zone = zone_of("L", RRL_LEAKY_BUCKET, 2, 1000, 5);
    Made m(1);
    m.keys.emplace_back(rrl::key_max_len(1), '\0');
    ASSERT_TRUE(m.request.add(&zone, zone, 1, nullptr, "k", 0,
                              m.keys.back().data()));  // delay=0

    m.request.results()[0] = {1, 0, 10, 500};
    m.request.decide_at(0);
    ASSERT_EQ(m.request.decision().passed, 1);
    EXPECT_EQ(m.request.delay_us(1),
              rrl::request_delay_us(m.request.limits(), m.request.results(), 1,
                                    true, 1));

    m.request.results()[0].passed = 0;
    m.request.decide_at(0);
    EXPECT_EQ(m.request.delay_us(1), 0);
}
