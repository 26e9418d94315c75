// rrl::limit_delay_us, rrl::request_delay_us and rrl_call_delay: limit_req's
// delay=D from the script's pass reply, as the local zone writes it too.
#include "script/delay.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "local/local_algorithms.hpp"
#include "local/local_zone.hpp"
#include "tests/support/call_limit.hpp"

// where rrl::call_limit() writes a limit's Redis key
static char redis_key_buf[1024];

namespace {

constexpr std::int64_t kNow = 1700000000LL * 1000000 + 250000;

rrl_call_limit_t leaky(std::uint64_t n, std::uint64_t period_ms,
                       std::uint64_t burst, std::uint64_t delay,
                       std::uint64_t cost = 1) {
    rrl_call_limit_t l =
        rrl_test::call_limit("z", RRL_LEAKY_BUCKET, n, period_ms, burst);
    l.cost = cost;
    l.delay = delay;
    return l;
}

// The waits of requests sent at the given times (us after kNow) to one
// limit, each decided as the script decides (local_algorithms.cpp is the script's
// arithmetic); a rejected request waits -1.
std::vector<std::int64_t> waits(const rrl_call_limit_t& l,
                                const std::vector<std::int64_t>& at,
                                std::uint64_t share = 1) {
    rrl::LocalShare s = rrl::local_share(l.algorithm, l.limit, l.burst, share);
    rrl::LocalLimit local{l.algorithm, s.limit, l.period_ms, s.burst, l.cost};
    rrl_local_state_t state{};
    std::vector<std::int64_t> out;
    for (std::int64_t t : at) {
        rrl_local_state_t next{};
        rrl_limit_result_t r{};
        EXPECT_TRUE(rrl::local_check(local, kNow + t, state, &next, &r));
        if (!r.passed) {
            out.push_back(-1);
            continue;
        }
        state = next;
        out.push_back(rrl::limit_delay_us(l, r, share));
    }
    return out;
}

TEST(Delay, DelayZeroSpacesABurstAtTheRate) {
    // 10r/s burst=5 delay=0: the k-th of 6 at once waits k x 100 ms, the
    // 7th is rejected
    EXPECT_EQ(waits(leaky(10, 1000, 5, 0), {0, 0, 0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 100000, 200000, 300000, 400000,
                                         500000, -1}));
}

TEST(Delay, WaitIsFromTheRequestsOwnArrival) {
    // the second comes 30 ms after the first: its slot is 70 ms away
    EXPECT_EQ(waits(leaky(10, 1000, 5, 0), {0, 30000, 30000}),
              (std::vector<std::int64_t>{0, 70000, 170000}));
}

TEST(Delay, FirstDExcessRequestsGoAtOnce) {
    // delay=2: the first 3 are immediate, then 100 ms apart
    EXPECT_EQ(waits(leaky(10, 1000, 5, 2), {0, 0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 0, 0, 100000, 200000, 300000}));
}

TEST(Delay, DelayEqualToBurstNeverDelays) {
    EXPECT_EQ(waits(leaky(10, 1000, 5, 5), {0, 0, 0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, -1}));
}

TEST(Delay, NodelayNeverDelays) {
    EXPECT_EQ(waits(leaky(10, 1000, 5, RRL_DELAY_NONE), {0, 0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0}));
}

TEST(Delay, CostTakesSeveralSlots) {
    // cost=2 at 10r/s delay=0: each takes 200 ms of the bucket; a request
    // waits until its own first slot
    EXPECT_EQ(waits(leaky(10, 1000, 5, 0, 2), {0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 200000, 400000, -1}));
}

TEST(Delay, FractionalIntervalRoundsWithoutSpuriousWaits) {
    // 6r/s: an interval of 166666.67 us; delay=1 lets two go at once,
    // then the waits are whole us, no more than 1 us off
    std::vector<std::int64_t> w = waits(leaky(6, 1000, 5, 1), {0, 0, 0, 0, 0});
    ASSERT_EQ(w.size(), 5u);
    EXPECT_EQ(w[0], 0);
    EXPECT_EQ(w[1], 0);
    EXPECT_NEAR(static_cast<double>(w[2]), 166666.67, 1.0);
    EXPECT_NEAR(static_cast<double>(w[3]), 333333.33, 1.0);
    EXPECT_NEAR(static_cast<double>(w[4]), 500000.0, 1.0);

    // a wait of 1 us is the rounding of both sides, not a wait
    rrl_limit_result_t r{1, 3, 166668, 0};
    EXPECT_EQ(rrl::limit_delay_us(leaky(6, 1000, 5, 0), r, 1), 0);
    r.reset_after_us = 166669;
    EXPECT_EQ(rrl::limit_delay_us(leaky(6, 1000, 5, 0), r, 1), 2);
}

TEST(Delay, LocalShareUsesThisServersShare) {
    // local_share=1/2 of 10r/s burst=4 delay=2: 5r/s burst=2 delay=1
    EXPECT_EQ(waits(leaky(10, 1000, 4, 2), {0, 0, 0, 0}, 2),
              (std::vector<std::int64_t>{0, 0, 200000, -1}));
    // nodelay (D = B) stays nodelay in the share
    EXPECT_EQ(waits(leaky(10, 1000, 4, 4), {0, 0, 0, 0}, 2),
              (std::vector<std::int64_t>{0, 0, 0, -1}));
}

TEST(Delay, OtherAlgorithmsNeverDelay) {
    for (int a : {RRL_FIXED_WINDOW, RRL_SLIDING_LOG, RRL_SLIDING_WINDOW,
                  RRL_TOKEN_BUCKET}) {
        rrl_call_limit_t l = leaky(10, 1000, 5, 0);
        l.algorithm = a;
        rrl_limit_result_t r{1, 0, 900000, 0};
        EXPECT_EQ(rrl::limit_delay_us(l, r, 1), 0) << a;
    }
}

// The limit of a request of zone (as configured) with delay=D, decided
// under a live override's rate and burst (as rrl_test::call_reply_decode()
// leaves it).
rrl_call_limit_t overridden(const rrl_call_limit_t& zone, std::uint64_t delay,
                            std::uint64_t n, std::uint64_t period_ms,
                            std::uint64_t burst, std::uint64_t cost = 1) {
    rrl_call_limit_t l;
    rrl_test::request_limit(&l, &zone, cost, nullptr, 0, nullptr, 0, delay,
                            redis_key_buf);
    l.override = RRL_OVERRIDE_RATE;
    l.limit = n;
    l.period_ms = period_ms;
    l.burst = burst;
    return l;
}

// issue 25: the zone 10r/s burst=5 with delay=0 and a key's override
// 1r/h burst=5 parked the 3rd request for 2 h (7199937 ms seen), holding a
// reloading worker; a wait is bounded by the zone's own B x interval
TEST(Delay, AnOverridesSlowerRateWaitsNoLongerThanTheZoneAllows) {
    rrl_call_limit_t zone = leaky(10, 1000, 5, RRL_DELAY_NONE);
    rrl_call_limit_t l = overridden(zone, 0, 1, 3600000, 5);
    EXPECT_EQ(waits(l, {0, 0, 0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 500000, 500000, 500000, 500000,
                                         500000, -1}));

    // the reply: 2 h ahead less 63 ms
    rrl_limit_result_t r{1, 2, 10799937000, 0};
    EXPECT_EQ(rrl::limit_delay_us(l, r, 1), 500000);
    EXPECT_EQ(rrl_test::call_delay(&l, &r, 1, 1, 1), 500000);

    // the 6th: 6 h ahead. delay=2: (5 - 2) x 100 ms; cost=2: (5 + 1 - 2)
    // x 100 ms; delay=B: never a wait, as under the zone's own rate
    rrl_limit_result_t sixth{1, 0, 21600000000, 0};
    EXPECT_EQ(rrl::limit_delay_us(overridden(zone, 2, 1, 3600000, 5), sixth, 1),
              300000);
    EXPECT_EQ(
        rrl::limit_delay_us(overridden(zone, 0, 1, 3600000, 5, 2), sixth, 1),
        400000);
    EXPECT_EQ(rrl::limit_delay_us(overridden(zone, 5, 1, 3600000, 5), sixth, 1),
              0);
}

TEST(Delay, AnOverridesFasterRateWaitsAsItsOwn) {
    // 100r/s burst=5 under a zone of 10r/s: 10 ms apart, under the bound
    rrl_call_limit_t zone = leaky(10, 1000, 5, RRL_DELAY_NONE);
    EXPECT_EQ(
        waits(overridden(zone, 0, 100, 1000, 5), {0, 0, 0, 0, 0, 0}),
        (std::vector<std::int64_t>{0, 10000, 20000, 30000, 40000, 50000}));
    // a larger burst than the zone's: its waits up to the zone's bound
    EXPECT_EQ(waits(overridden(zone, 0, 5, 1000, 20), {0, 0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 200000, 400000, 500000, 500000}));
}

TEST(Delay, TheBoundNeverShortensTheZonesOwnWaits) {
    // the zone's own values, as rrl::call_limit() sets them: the waits of
    // the tests above, the longest of them exactly the bound
    rrl_call_limit_t zone = leaky(10, 1000, 5, RRL_DELAY_NONE);
    rrl_call_limit_t l;
    rrl_test::request_limit(&l, &zone, 2, nullptr, 0, nullptr, 0, 0,
                            redis_key_buf);
    EXPECT_EQ(l.zone_limit, 10u);
    EXPECT_EQ(waits(l, {0, 0, 0, 0}),
              (std::vector<std::int64_t>{0, 200000, 400000, -1}));

    rrl_call_limit_t z4 = leaky(10, 1000, 4, RRL_DELAY_NONE);
    rrl_test::request_limit(&l, &z4, 1, nullptr, 0, nullptr, 0, 2,
                            redis_key_buf);
    EXPECT_EQ(waits(l, {0, 0, 0, 0}, 2),
              (std::vector<std::int64_t>{0, 0, 200000, -1}));

    rrl_call_limit_t z6 = leaky(6, 1000, 5, RRL_DELAY_NONE);
    rrl_test::request_limit(&l, &z6, 1, nullptr, 0, nullptr, 0, 1,
                            redis_key_buf);
    std::vector<std::int64_t> w = waits(l, {0, 0, 0, 0, 0, 0, 0});
    EXPECT_NEAR(static_cast<double>(w[5]), 666666.67, 1.0);
    EXPECT_EQ(w[6], -1);
}

TEST(Delay, RequestWaitsForTheLongestOfItsLimits) {
    std::vector<rrl_call_limit_t> l = {leaky(10, 1000, 5, 0),
                                       leaky(1, 1000, 5, 0),
                                       leaky(10, 1000, 5, RRL_DELAY_NONE)};
    // 300 ms ahead at 10r/s: 200 ms; 3 s ahead at 1r/s: 2 s; nodelay: 0
    std::vector<rrl_limit_result_t> r = {
        {1, 2, 300000, 0}, {1, 2, 3000000, 0}, {1, 2, 600000, 0}};
    EXPECT_EQ(rrl::request_delay_us(l.data(), r.data(), 3, true, 1), 2000000);
    EXPECT_EQ(rrl_test::call_delay(l.data(), r.data(), 3, 1, 1), 2000000);
    EXPECT_EQ(rrl::request_delay_us(l.data(), r.data(), 1, true, 1), 200000);
}

TEST(Delay, RejectedRequestNeverWaits) {
    std::vector<rrl_call_limit_t> l = {leaky(10, 1000, 5, 0),
                                       leaky(10, 1000, 5, 0)};
    std::vector<rrl_limit_result_t> r = {{1, 2, 300000, 0},
                                         {0, 0, 600000, 100000}};
    EXPECT_EQ(rrl::request_delay_us(l.data(), r.data(), 2, false, 1), 0);
    EXPECT_EQ(rrl_test::call_delay(l.data(), r.data(), 2, 0, 1), 0);
    EXPECT_EQ(rrl_test::call_delay(l.data(), r.data(), 0, 1, 1), 0);
}

}  // namespace
