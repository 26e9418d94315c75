// The reconnect backoff (rrl::backoff_next): its bounds, its doubling, and
// its jitter of +-25% over the whole range of the random number.
#include "engine/backoff.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(Backoff, StartsAtTheMinimum) {
    std::uint64_t b = 0;
    rrl::backoff_next(&b, 0);
    EXPECT_EQ(b, rrl::kBackoffMinMs);
}

TEST(Backoff, DoublesUpToTheMaximum) {
    std::uint64_t b = 0;
    const std::uint64_t expected[] = {50, 100, 200, 400, 500, 500, 500};
    for (std::uint64_t e : expected) {
        rrl::backoff_next(&b, 0);
        EXPECT_EQ(b, e);
    }
}

TEST(Backoff, AnOddBackoffIsStillCapped) {
    std::uint64_t b = 260;
    rrl::backoff_next(&b, 0);
    EXPECT_EQ(b, rrl::kBackoffMaxMs);
}

TEST(Backoff, TheDelayIsTheBackoffWithin25Percent) {
    std::uint64_t b = 0;
    // 50: 37 + random % 26
    EXPECT_EQ(rrl::backoff_next(&b, 0), 37u);
    b = 0;
    EXPECT_EQ(rrl::backoff_next(&b, 25), 62u);
    b = 0;
    EXPECT_EQ(rrl::backoff_next(&b, 26), 37u);
    // 500: 375 + random % 251
    b = 500;
    EXPECT_EQ(rrl::backoff_next(&b, 0), 375u);
    EXPECT_EQ(rrl::backoff_next(&b, 250), 625u);
}

TEST(Backoff, EveryRandomNumberGivesADelayInBounds) {
    for (std::uint64_t start : {0, 50, 100, 200, 400, 500}) {
        for (std::uint64_t r = 0; r < 2000; r += 7) {
            std::uint64_t b = start;
            std::uint64_t delay = rrl::backoff_next(&b, r);
            EXPECT_GE(delay, b * 3 / 4);
            EXPECT_LE(delay, b * 5 / 4);
        }
    }
    std::uint64_t b = 500;
    std::uint64_t delay = rrl::backoff_next(&b, UINT64_MAX);
    EXPECT_GE(delay, 375u);
    EXPECT_LE(delay, 625u);
}

}  // namespace
