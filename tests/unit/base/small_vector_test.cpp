// SmallVector: its first N elements inline, the rest (all of them) on the
// heap, and the same behaviour either way.
#include "base/small_vector.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

TEST(SmallVector, InlineThenAllOnTheHeap) {
    rrl::SmallVector<int, 2> v;
    EXPECT_TRUE(v.empty());
    v.push_back(1);
    v.push_back(2);
    const int* inline_data = v.data();
    v.push_back(3);  // spills: all three move
    EXPECT_NE(v.data(), inline_data);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v.back(), 3);
    EXPECT_THROW(v.at(3), std::out_of_range);
    v.pop_back();
    EXPECT_EQ(v.size(), 2u);
    EXPECT_EQ(v.at(1), 2);
}

TEST(SmallVector, AssignCopiesInPlaceOfTheElements) {
    const char text[] = "rrl:{zone:client}:fw";
    rrl::SmallVector<char, 8> v(3, 'x');
    v.assign(text, 5);  // fits inline
    EXPECT_EQ(std::string(v.data(), v.size()), "rrl:{");
    v.assign(text, sizeof(text) - 1);  // does not
    EXPECT_EQ(std::string(v.data(), v.size()), text);
    v.assign(text, 3);  // inline again
    EXPECT_EQ(std::string(v.begin(), v.end()), "rrl");
    v.assign(text, 0);
    EXPECT_TRUE(v.empty());
}

TEST(SmallVector, ResizeFillsAndShrinks) {
    rrl::SmallVector<std::string, 1> v(2, "a");
    EXPECT_EQ(v.size(), 2u);
    v.resize(1);
    EXPECT_EQ(v.front(), "a");
    v.resize(3, "b");
    EXPECT_EQ(v[2], "b");
}

}  // namespace
