// rrl::parse_rate ("Nr/PERIOD") and rrl::parse_time_ms (nginx time syntax,
// bare number = seconds), each on the whole text and on a prefix of a
// longer buffer (only the given length counts).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "script/rate.hpp"
#include "api/rrl.h"

namespace {

struct RateCase {
    const char* text;
    std::uint64_t count;
    std::uint64_t period_ms;
};

void PrintTo(const RateCase& c, std::ostream* os) { *os << c.text; }

class RateAccepted : public ::testing::TestWithParam<RateCase> {};

TEST_P(RateAccepted, CppApi) {
    const RateCase& c = GetParam();
    std::optional<rrl::Rate> rate = rrl::parse_rate(c.text);
    ASSERT_TRUE(rate.has_value()) << c.text;
    EXPECT_EQ(rate->count, c.count) << c.text;
    EXPECT_EQ(rate->period_ms, c.period_ms) << c.text;
}

TEST_P(RateAccepted, OnlyTheGivenLengthCounts) {
    const RateCase& c = GetParam();
    std::string text = std::string(c.text) + "XYZ";
    auto rate = rrl::parse_rate({text.data(), text.size() - 3});
    ASSERT_TRUE(rate.has_value()) << c.text;
    EXPECT_EQ(rate->count, c.count) << c.text;
    EXPECT_EQ(rate->period_ms, c.period_ms) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Rates, RateAccepted,
    ::testing::Values(RateCase{"10r/s", 10, 1000},
                      RateCase{"240r/h", 240, 3600000},
                      RateCase{"5r/10s", 5, 10000},
                      RateCase{"1r/d", 1, 86400000},
                      RateCase{"100r/1m30s", 100, 90000},
                      RateCase{"10r/m", 10, 60000},
                      RateCase{"3r/500ms", 3, 500},
                      RateCase{"1r/1ms", 1, 1},
                      RateCase{"7r/2h", 7, 7200000},
                      RateCase{"2r/30", 2, 30000},  // bare number: seconds
                      RateCase{"1000000000r/s", 1000000000, 1000},
                      // the largest period: 2^52 ms, rounded down to seconds
                      RateCase{"1r/365d", 1, 31536000000}));

class RateRejected : public ::testing::TestWithParam<const char*> {};

TEST_P(RateRejected, CppApi) {
    EXPECT_FALSE(rrl::parse_rate(GetParam()).has_value()) << GetParam();
}

TEST_P(RateRejected, OnlyTheGivenLengthCounts) {
    std::string text = std::string(GetParam()) + "10r/s";
    EXPECT_FALSE(rrl::parse_rate({text.data(), text.size() - 5}).has_value())
        << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Rates, RateRejected,
    ::testing::Values("", "0r/s", "10r", "10/s", "r/s", "10r/", "10r/x",
                      "10r/0s", "-1r/s", "+1r/s", "10r/ms", "10r/S",
                      "10 r/s", "10r/ s", "10r/s ", "1.5r/s", "10r/1.5s",
                      "1000000001r/s",            // count over 1e9
                      "9999999999999999r/s",      // 16 digits
                      "1r/4503599627371s",        // just over 2^52 ms
                      "1r/999999999999999w",      // overflows the multiply
                      "1r/4503599627370s1000ms",  // sum just over 2^52 ms
                      "1r/99999999999999999999s",
                      "1r/366d", "1r/365d1ms", "1r/53w"));  // over 365 days

// A view's length: bytes after it are not part of the rate.
TEST(RateParse, HonoursLength) {
    const char text[] = "10r/sXYZ";
    auto rate = rrl::parse_rate({text, 5});
    ASSERT_TRUE(rate.has_value());
    EXPECT_EQ(rate->count, 10u);
    EXPECT_EQ(rate->period_ms, 1000u);
    EXPECT_FALSE(rrl::parse_rate({text, 6}).has_value());
}

struct TimeCase {
    const char* text;
    std::uint64_t ms;
};

void PrintTo(const TimeCase& c, std::ostream* os) { *os << c.text; }

class TimeAccepted : public ::testing::TestWithParam<TimeCase> {};

TEST_P(TimeAccepted, CppApi) {
    std::optional<std::uint64_t> ms = rrl::parse_time_ms(GetParam().text);
    ASSERT_TRUE(ms.has_value()) << GetParam().text;
    EXPECT_EQ(*ms, GetParam().ms) << GetParam().text;
}

TEST_P(TimeAccepted, OnlyTheGivenLengthCounts) {
    std::string text = std::string(GetParam().text) + "XYZ";
    auto ms = rrl::parse_time_ms({text.data(), text.size() - 3});
    ASSERT_TRUE(ms.has_value()) << GetParam().text;
    EXPECT_EQ(*ms, GetParam().ms) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Times, TimeAccepted,
    ::testing::Values(TimeCase{"250ms", 250}, TimeCase{"10s", 10000},
                      TimeCase{"5m", 300000}, TimeCase{"1h30m", 5400000},
                      TimeCase{"2d", 172800000}, TimeCase{"1w", 604800000},
                      TimeCase{"7", 7000}, TimeCase{"0", 0},
                      TimeCase{"1h1m1s1ms", 3661001},
                      TimeCase{"4503599627370s", 4503599627370000}));

class TimeRejected : public ::testing::TestWithParam<const char*> {};

TEST_P(TimeRejected, CppApi) {
    EXPECT_FALSE(rrl::parse_time_ms(GetParam()).has_value()) << GetParam();
}

TEST_P(TimeRejected, OnlyTheGivenLengthCounts) {
    std::string text = std::string(GetParam()) + "10s";
    EXPECT_FALSE(rrl::parse_time_ms({text.data(), text.size() - 3}).has_value())
        << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Times, TimeRejected,
                         ::testing::Values("", "s", "10x", "1.5s", "ms",
                                           "-1s", "10 s", "1h 30m", "5M",
                                           "4503599627371s",
                                           "999999999999999w",
                                           // as nginx: units decrease, once
                                           "30m1h", "1s1s", "1s5", "1m1h"));

}  // namespace
