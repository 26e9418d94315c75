// The slot map (SlotMap): which node each Cluster slot maps to after
// CLUSTER SLOTS, what is left unmapped, and MOVED.
#include "topology/slot_map.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "api/rrl.h"

namespace {

rrl::SlotRange range(unsigned start, unsigned end) {
    return rrl::SlotRange{start, end, {"", 7000}};
}

struct Map {
    rrl::SlotMap map;
};

// SlotMap::replace() as RRL_OK, its summary out, or RRL_ERROR
int replace(rrl::SlotMap& map, const rrl::SlotRange* ranges, void* const* nodes,
            size_t n, size_t* covered, size_t* primaries) {
    auto summary = map.replace({ranges, ranges + n}, nodes);
    if (!summary) return RRL_ERROR;
    *covered = summary->covered;
    *primaries = summary->primaries;
    return RRL_OK;
}

int a, b, c;

TEST(SlotMap, EmptyAtFirst) {
    Map m;
    EXPECT_EQ(m.map.node(0), nullptr);
    EXPECT_EQ(m.map.node(RRL_CLUSTER_SLOTS - 1), nullptr);
}

TEST(SlotMap, EachRangeToItsNode) {
    Map m;
    std::vector<rrl::SlotRange> ranges = {range(0, 5460), range(5461, 10922),
                                          range(10923, 16383)};
    void* nodes[] = {&a, &b, &c};
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(replace(m.map, ranges.data(), nodes, 3, &covered, &primaries),
              RRL_OK);
    EXPECT_EQ(covered, 16384u);
    EXPECT_EQ(primaries, 3u);
    EXPECT_EQ(m.map.node(0), &a);
    EXPECT_EQ(m.map.node(5460), &a);
    EXPECT_EQ(m.map.node(5461), &b);
    EXPECT_EQ(m.map.node(16383), &c);
    EXPECT_EQ(m.map.node(16384), nullptr);  // no such slot
}

TEST(SlotMap, PrimariesAreCountedOnceAndLeftOutRangesUnmapped) {
    Map m;
    std::vector<rrl::SlotRange> ranges = {range(0, 99), range(200, 299),
                                          range(100, 199)};
    void* nodes[] = {&a, &a, nullptr};  // the third named by a host name
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(replace(m.map, ranges.data(), nodes, 3, &covered, &primaries),
              RRL_OK);
    EXPECT_EQ(covered, 200u);
    EXPECT_EQ(primaries, 1u);
    EXPECT_EQ(m.map.node(150), nullptr);
    EXPECT_EQ(m.map.node(250), &a);
    EXPECT_EQ(m.map.node(300), nullptr);  // no range
    EXPECT_TRUE(m.map.serves(&a));
    EXPECT_FALSE(m.map.serves(nullptr));
}

TEST(SlotMap, ANewMapForgetsTheOld) {
    Map m;
    std::vector<rrl::SlotRange> ranges = {range(0, 16383)};
    void* nodes[] = {&a};
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(replace(m.map, ranges.data(), nodes, 1, &covered, &primaries),
              RRL_OK);
    ranges = {range(0, 8191)};
    nodes[0] = &b;
    ASSERT_EQ(replace(m.map, ranges.data(), nodes, 1, &covered, &primaries),
              RRL_OK);
    EXPECT_EQ(m.map.node(0), &b);
    EXPECT_EQ(m.map.node(8192), nullptr);
    EXPECT_FALSE(m.map.serves(&a));  // out of the map now
    EXPECT_TRUE(m.map.serves(&b));
    ASSERT_EQ(replace(m.map, nullptr, nullptr, 0, &covered, &primaries),
              RRL_OK);
    EXPECT_EQ(covered, 0u);
    EXPECT_EQ(primaries, 0u);
    EXPECT_EQ(m.map.node(0), nullptr);
}

TEST(SlotMap, ARangeOutOfTheSlotsChangesNothing) {
    Map m;
    m.map.set(7, &c);
    void* nodes[] = {&a, &b};
    size_t covered = 9, primaries = 9;
    std::vector<rrl::SlotRange> ranges = {range(0, 10), range(5, 16384)};
    EXPECT_EQ(replace(m.map, ranges.data(), nodes, 2, &covered, &primaries),
              RRL_ERROR);
    ranges = {range(0, 10), range(20, 19)};
    EXPECT_EQ(replace(m.map, ranges.data(), nodes, 2, &covered, &primaries),
              RRL_ERROR);
    EXPECT_EQ(m.map.node(7), &c);
    EXPECT_EQ(covered, 9u);
    EXPECT_EQ(primaries, 9u);
}

TEST(SlotMap, MovedChangesOneSlot) {
    Map m;
    m.map.set(42, &b);
    m.map.set(RRL_CLUSTER_SLOTS, &b);  // ignored
    EXPECT_EQ(m.map.node(42), &b);
    EXPECT_FALSE(m.map.serves(&b));  // not from CLUSTER SLOTS
    EXPECT_EQ(m.map.node(41), nullptr);
    EXPECT_EQ(m.map.node(43), nullptr);
}

}  // namespace
