// rrl::request_cost: a variable's cost, the same on every
// word size (a 32-bit ngx_uint_t once wrapped "4294967296" to 0, then 1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "base/rrl_types.h"
#include "script/cost.hpp"

namespace {

std::uint64_t parse(const std::string& s) {
    return rrl::request_cost(s);
}

TEST(Cost, PositiveIntegers) {
    EXPECT_EQ(parse("1"), 1u);
    EXPECT_EQ(parse("7"), 7u);
    EXPECT_EQ(parse("0042"), 42u);
    EXPECT_EQ(parse("1000000000"), 1000000000u);
}

TEST(Cost, NotAPositiveIntegerCostsOne) {
    for (const char* s : {"", "0", "000", "-1", "+1", "1.5", " 7", "7 ", "abc", "1e3", "0x10"}) {
        EXPECT_EQ(parse(s), 1u) << '"' << s << '"';
    }
}

TEST(Cost, OverTheMaximumCostsMoreThanAnyCapacity) {
    EXPECT_EQ(parse("1000000001"), RRL_OVER_COST);
    EXPECT_EQ(parse("2000000002"), RRL_OVER_COST);
    EXPECT_GT(RRL_OVER_COST, 2 * RRL_MAX_COST);
}

// values that wrap a 32-bit or a 64-bit accumulator
TEST(Cost, OverflowNeverWrapsToACheapCost) {
    for (const char* s : {"4294967295", "4294967296", "4294967297", "8589934592", "42949672960",
                          "18446744073709551615", "18446744073709551616",
                          "36893488147419103232", "99999999999999999999999999999999999999"}) {
        EXPECT_EQ(parse(s), RRL_OVER_COST) << s;
    }
    EXPECT_EQ(parse(std::string(10000, '9')), RRL_OVER_COST);
}

TEST(Cost, TheOverCostFitsA32BitWord) {
    // the shim keeps costs in ngx_uint_t, 32 bits on i386 and armhf
    EXPECT_LE(RRL_OVER_COST, UINT32_MAX);
}

}  // namespace
