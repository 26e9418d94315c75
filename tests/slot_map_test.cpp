// The slot map (rrl_slot_map_*): which node each Cluster slot maps to after
// CLUSTER SLOTS, what is left unmapped, and MOVED.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "rrl_slot_map.h"

namespace {

rrl_slot_range_t range(unsigned start, unsigned end) {
    rrl_slot_range_t r;
    std::memset(&r, 0, sizeof(r));
    r.start = start;
    r.end = end;
    r.port = 7000;
    return r;
}

struct Map {
    rrl_slot_map_t* map = rrl_slot_map_create();
    ~Map() { rrl_slot_map_destroy(map); }
};

int a, b, c;

TEST(SlotMap, EmptyAtFirst) {
    Map m;
    ASSERT_NE(m.map, nullptr);
    EXPECT_EQ(rrl_slot_map_node(m.map, 0), nullptr);
    EXPECT_EQ(rrl_slot_map_node(m.map, RRL_CLUSTER_SLOTS - 1), nullptr);
}

TEST(SlotMap, EachRangeToItsNode) {
    Map m;
    std::vector<rrl_slot_range_t> ranges = {range(0, 5460), range(5461, 10922),
                                            range(10923, 16383)};
    void* nodes[] = {&a, &b, &c};
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 3, &covered,
                                   &primaries),
              RRL_OK);
    EXPECT_EQ(covered, 16384u);
    EXPECT_EQ(primaries, 3u);
    EXPECT_EQ(rrl_slot_map_node(m.map, 0), &a);
    EXPECT_EQ(rrl_slot_map_node(m.map, 5460), &a);
    EXPECT_EQ(rrl_slot_map_node(m.map, 5461), &b);
    EXPECT_EQ(rrl_slot_map_node(m.map, 16383), &c);
    EXPECT_EQ(rrl_slot_map_node(m.map, 16384), nullptr);  // no such slot
}

TEST(SlotMap, PrimariesAreCountedOnceAndLeftOutRangesUnmapped) {
    Map m;
    std::vector<rrl_slot_range_t> ranges = {range(0, 99), range(200, 299),
                                            range(100, 199)};
    void* nodes[] = {&a, &a, nullptr};  // the third named by a host name
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 3, &covered,
                                   &primaries),
              RRL_OK);
    EXPECT_EQ(covered, 200u);
    EXPECT_EQ(primaries, 1u);
    EXPECT_EQ(rrl_slot_map_node(m.map, 150), nullptr);
    EXPECT_EQ(rrl_slot_map_node(m.map, 250), &a);
    EXPECT_EQ(rrl_slot_map_node(m.map, 300), nullptr);  // no range
    EXPECT_EQ(rrl_slot_map_serves(m.map, &a), 1);
    EXPECT_EQ(rrl_slot_map_serves(m.map, nullptr), 0);
}

TEST(SlotMap, ANewMapForgetsTheOld) {
    Map m;
    std::vector<rrl_slot_range_t> ranges = {range(0, 16383)};
    void* nodes[] = {&a};
    size_t covered = 0, primaries = 0;
    ASSERT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 1, &covered,
                                   &primaries),
              RRL_OK);
    ranges = {range(0, 8191)};
    nodes[0] = &b;
    ASSERT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 1, &covered,
                                   &primaries),
              RRL_OK);
    EXPECT_EQ(rrl_slot_map_node(m.map, 0), &b);
    EXPECT_EQ(rrl_slot_map_node(m.map, 8192), nullptr);
    EXPECT_EQ(rrl_slot_map_serves(m.map, &a), 0);  // out of the map now
    EXPECT_EQ(rrl_slot_map_serves(m.map, &b), 1);
    ASSERT_EQ(
        rrl_slot_map_replace(m.map, nullptr, nullptr, 0, &covered, &primaries),
        RRL_OK);
    EXPECT_EQ(covered, 0u);
    EXPECT_EQ(primaries, 0u);
    EXPECT_EQ(rrl_slot_map_node(m.map, 0), nullptr);
}

TEST(SlotMap, ARangeOutOfTheSlotsChangesNothing) {
    Map m;
    rrl_slot_map_set(m.map, 7, &c);
    void* nodes[] = {&a, &b};
    size_t covered = 9, primaries = 9;
    std::vector<rrl_slot_range_t> ranges = {range(0, 10), range(5, 16384)};
    EXPECT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 2, &covered,
                                   &primaries),
              RRL_ERROR);
    ranges = {range(0, 10), range(20, 19)};
    EXPECT_EQ(rrl_slot_map_replace(m.map, ranges.data(), nodes, 2, &covered,
                                   &primaries),
              RRL_ERROR);
    EXPECT_EQ(rrl_slot_map_node(m.map, 7), &c);
    EXPECT_EQ(covered, 9u);
    EXPECT_EQ(primaries, 9u);
}

TEST(SlotMap, MovedChangesOneSlot) {
    Map m;
    rrl_slot_map_set(m.map, 42, &b);
    rrl_slot_map_set(m.map, RRL_CLUSTER_SLOTS, &b);  // ignored
    EXPECT_EQ(rrl_slot_map_node(m.map, 42), &b);
    EXPECT_EQ(rrl_slot_map_serves(m.map, &b), 0);  // not from CLUSTER SLOTS
    EXPECT_EQ(rrl_slot_map_node(m.map, 41), nullptr);
    EXPECT_EQ(rrl_slot_map_node(m.map, 43), nullptr);
}

}  // namespace
