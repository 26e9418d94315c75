// rrl_local_zone.h: the share of a zone one server allows alone with
// local_share=1/K, and a key's entry in a local zone: decided as
// local_check() on that share, an ended entry counting as none, kept
// until the limit's reset.
#include "local/local_zone.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "local/local_algorithms.hpp"
#include "api/rrl.h"
#include "api/rrl_local_zone.h"

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

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kNow = 1700000000LL * 1000 * kMs;

struct Share {
    std::uint64_t limit;
    std::uint64_t burst;
};

Share share_of(int algorithm, std::uint64_t limit, std::uint64_t burst,
               std::uint64_t share) {
    rrl::LocalShare s = rrl::local_share(algorithm, limit, burst, share);
    return Share{s.limit, s.burst};
}

TEST(LocalShare, OneShareIsTheWholeZone) {
    Share s = share_of(RRL_SLIDING_WINDOW, 100, 20, 1);
    EXPECT_EQ(s.limit, 100u);
    EXPECT_EQ(s.burst, 20u);
    s = share_of(RRL_TOKEN_BUCKET, 100, 100, 1);
    EXPECT_EQ(s.limit, 100u);
    EXPECT_EQ(s.burst, 100u);
}

TEST(LocalShare, ZeroIsOne) {
    Share s = share_of(RRL_FIXED_WINDOW, 100, 20, 0);
    EXPECT_EQ(s.limit, 100u);
    EXPECT_EQ(s.burst, 20u);
}

TEST(LocalShare, DividesRoundingDown) {
    Share s = share_of(RRL_FIXED_WINDOW, 100, 20, 3);
    EXPECT_EQ(s.limit, 33u);
    EXPECT_EQ(s.burst, 6u);
    s = share_of(RRL_LEAKY_BUCKET, 10, 9, 4);
    EXPECT_EQ(s.limit, 2u);
    EXPECT_EQ(s.burst, 2u);
}

TEST(LocalShare, AtLeastOneRequestPerPeriod) {
    Share s = share_of(RRL_SLIDING_WINDOW, 3, 0, 10);
    EXPECT_EQ(s.limit, 1u);
    EXPECT_EQ(s.burst, 0u);
    s = share_of(RRL_LEAKY_BUCKET, 3, 5, 10);
    EXPECT_EQ(s.limit, 1u);
    EXPECT_EQ(s.burst, 0u);  // leaky_bucket: no extra allowance
}

TEST(LocalShare, ATokenBucketKeepsAToken) {
    Share s = share_of(RRL_TOKEN_BUCKET, 3, 3, 10);
    EXPECT_EQ(s.limit, 1u);
    EXPECT_EQ(s.burst, 1u);
    s = share_of(RRL_TOKEN_BUCKET, 30, 30, 10);
    EXPECT_EQ(s.burst, 3u);
}

TEST(LocalCapacity, IsTheCapacityOfTheShare) {
    EXPECT_EQ(rrl::local_capacity(RRL_FIXED_WINDOW, 100, 20, 1), 120u);
    EXPECT_EQ(rrl::local_capacity(RRL_FIXED_WINDOW, 100, 20, 4), 30u);
    EXPECT_EQ(rrl::local_capacity(RRL_TOKEN_BUCKET, 100, 100, 4), 25u);
    EXPECT_EQ(rrl::local_capacity(RRL_TOKEN_BUCKET, 3, 3, 10), 1u);
    EXPECT_EQ(rrl::local_capacity(RRL_LEAKY_BUCKET, 10, 9, 4), 3u);
    EXPECT_EQ(rrl::local_capacity(RRL_ALGORITHM_COUNT, 10, 9, 4), 0u);
}

// local_zone_check on a zone of 5r/s, burst, share and cost given
int check(int algorithm, std::uint64_t burst, std::uint64_t share,
          std::uint64_t cost, std::int64_t now, const rrl_local_entry_t* e,
          rrl_local_entry_t* next, std::int64_t* v) {
    return rrl::local_zone_check({algorithm, 5, 1000, burst, cost}, share, now,
                                 e, next, v)
               ? RRL_OK
               : RRL_ERROR;
}

TEST(LocalZoneCheck, NoEntryIsAFreshKey) {
    rrl_local_entry_t next{};
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    rrl_local_state_t none{};
    rrl_local_state_t expected{};
    rrl_limit_result_t r{};

    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 1, 2, kNow, nullptr, &next, v),
              RRL_OK);
    ASSERT_EQ(check_locally(RRL_FIXED_WINDOW, 5, 1000, 0, 2, kNow, &none,
                            &expected, &r),
              RRL_OK);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[0], r.passed);
    EXPECT_EQ(v[1], 3);
    EXPECT_EQ(v[1], r.remaining);
    EXPECT_EQ(v[2], r.reset_after_us);
    EXPECT_EQ(v[3], r.retry_after_us);
    EXPECT_EQ(next.state.a, expected.a);
    EXPECT_EQ(next.state.b, 2);
    // kept until the window's end, when the count no longer matters
    EXPECT_EQ(next.end_us, kNow + r.reset_after_us);
    EXPECT_GT(next.end_us, kNow);
}

TEST(LocalZoneCheck, AnEntryGoesOnFromItsState) {
    rrl_local_entry_t e{};
    rrl_local_entry_t next{};
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 1, 1, kNow + i, &e, &next, v),
                  RRL_OK);
        EXPECT_EQ(v[0], 1) << i;
        EXPECT_EQ(v[1], 4 - i) << i;
        e = next;
    }

    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 1, 1, kNow + 5, &e, &next, v), RRL_OK);
    EXPECT_EQ(v[0], 0);
    EXPECT_GT(v[3], 0);
}

TEST(LocalZoneCheck, AnEndedEntryCountsAsNone) {
    rrl_local_entry_t e{};
    rrl_local_entry_t next{};
    rrl_local_entry_t fresh{};
    std::int64_t v[RRL_REPLY_PER_LIMIT];
    std::int64_t w[RRL_REPLY_PER_LIMIT];

    // a full token bucket's state that claims to matter until kNow
    e.end_us = kNow;
    e.state.a = kNow - 1;
    e.state.c = 0;

    ASSERT_EQ(check(RRL_TOKEN_BUCKET, 5, 1, 1, kNow, &e, &next, v), RRL_OK);
    ASSERT_EQ(check(RRL_TOKEN_BUCKET, 5, 1, 1, kNow, nullptr, &fresh, w),
              RRL_OK);
    EXPECT_EQ(v[0], 1);
    for (int i = 0; i < RRL_REPLY_PER_LIMIT; i++) EXPECT_EQ(v[i], w[i]) << i;
    EXPECT_EQ(next.end_us, fresh.end_us);

    // one us earlier it still matters: an empty bucket rejects
    e.end_us = kNow + 1;
    ASSERT_EQ(check(RRL_TOKEN_BUCKET, 5, 1, 1, kNow, &e, &next, v), RRL_OK);
    EXPECT_EQ(v[0], 0);
}

TEST(LocalZoneCheck, DecidesOnTheShare) {
    rrl_local_entry_t e{};
    rrl_local_entry_t next{};
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    // 5r/s shared by 2: 2 requests a second here
    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 2, 1, kNow, &e, &next, v), RRL_OK);
    EXPECT_EQ(v[1], 1);
    e = next;
    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 2, 1, kNow, &e, &next, v), RRL_OK);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[1], 0);
    e = next;
    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 2, 1, kNow, &e, &next, v), RRL_OK);
    EXPECT_EQ(v[0], 0);

    // a cost over the share's capacity never passes
    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 2, 3, kNow, nullptr, &next, v),
              RRL_OK);
    EXPECT_EQ(v[0], 0);
}

TEST(LocalZoneCheck, RefusesWhatLocalCheckRefuses) {
    rrl_local_entry_t next{};
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    EXPECT_EQ(check(RRL_ALGORITHM_COUNT, 0, 1, 1, kNow, nullptr, &next, v),
              RRL_ERROR);
    EXPECT_FALSE(rrl::local_zone_check({RRL_FIXED_WINDOW, 5, 0, 0, 1}, 1, kNow,
                                       nullptr, &next, v));
}

// a limit of 5r/s fixed_window, cost 1, on entry
rrl_local_limit_t limit_of(const rrl_local_entry_t* entry) {
    return {RRL_FIXED_WINDOW, 5, 1000, 0, 1, entry};
}

constexpr std::size_t kTwo = RRL_REPLY_HEADER + 2 * RRL_REPLY_PER_LIMIT;

// The zone's rate of a request's limit, with the request's cost.
TEST(LocalZoneLimit, FromTheZonesPartOfTheLimit) {
    rrl_call_limit_t zone{};
    zone.algorithm = RRL_SLIDING_WINDOW;
    zone.limit = 10;
    zone.period_ms = 60000;
    zone.burst = 3;
    zone.cost = 7;  // not the zone's: the request's is given
    rrl_local_limit_t l = rrl_local_limit(&zone, 2);
    EXPECT_EQ(l.algorithm, RRL_SLIDING_WINDOW);
    EXPECT_EQ(l.limit, 10u);
    EXPECT_EQ(l.period_ms, 60000u);
    EXPECT_EQ(l.burst, 3u);
    EXPECT_EQ(l.cost, 2u);
    EXPECT_EQ(l.entry, nullptr);
}

TEST(LocalZoneDecide, PassesWhenEveryLimitPasses) {
    rrl_local_limit_t limits[2] = {limit_of(nullptr), limit_of(nullptr)};
    rrl_local_entry_t next[2];
    rrl_local_entry_t expected{};
    std::int64_t values[kTwo];
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    ASSERT_EQ(rrl_local_zone_decide(limits, 2, 1, kNow, next, values), kTwo);
    EXPECT_EQ(values[0], 1);
    EXPECT_EQ(values[1], kNow);

    // each limit's part as local_zone_check() gives it
    ASSERT_EQ(check(RRL_FIXED_WINDOW, 0, 1, 1, kNow, nullptr, &expected, v),
              RRL_OK);
    for (std::size_t i = 0; i < 2; i++) {
        for (int j = 0; j < RRL_REPLY_PER_LIMIT; j++) {
            EXPECT_EQ(values[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i + j],
                      v[j]);
        }
        EXPECT_EQ(next[i].end_us, expected.end_us);
        EXPECT_EQ(next[i].state.b, expected.state.b);
    }
}

TEST(LocalZoneDecide, OneLimitRejectingRejectsTheRequest) {
    rrl_local_entry_t full{};
    rrl_local_entry_t next[2];
    std::int64_t values[kTwo];

    for (int i = 0; i < 5; i++) {
        rrl_local_limit_t l = limit_of(&full);
        ASSERT_EQ(rrl_local_zone_decide(&l, 1, 1, kNow, next, values),
                  RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT);
        full = next[0];
    }

    rrl_local_limit_t limits[2] = {limit_of(nullptr), limit_of(&full)};

    ASSERT_EQ(rrl_local_zone_decide(limits, 2, 1, kNow, next, values), kTwo);
    EXPECT_EQ(values[0], 0);
    EXPECT_EQ(values[RRL_REPLY_HEADER], 1);
    EXPECT_EQ(values[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT], 0);
}

TEST(LocalZoneDecide, NoLimitsPass) {
    std::int64_t values[RRL_REPLY_HEADER];

    ASSERT_EQ(rrl_local_zone_decide(nullptr, 0, 1, kNow, nullptr, values),
              static_cast<std::size_t>(RRL_REPLY_HEADER));
    EXPECT_EQ(values[0], 1);
}

TEST(LocalZoneDecide, FailsOnALimitLocalCheckRefuses) {
    rrl_local_limit_t limits[2] = {limit_of(nullptr), limit_of(nullptr)};
    rrl_local_entry_t next[2];
    std::int64_t values[kTwo];

    limits[1].period_ms = 0;
    EXPECT_EQ(rrl_local_zone_decide(limits, 2, 1, kNow, next, values), 0u);
}

}  // namespace
