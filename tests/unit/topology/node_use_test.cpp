// A node's use (node_use.hpp): which node a new address takes over, when
// an idle node closes, when a stuck connection is dropped, and what
// follows a lost connection.
#include "topology/node_use.hpp"

#include <gtest/gtest.h>

namespace {

// a primary nothing uses or points to: free, not idle
rrl::NodeUse unused() {
    rrl::NodeUse u;
    u.data = 1;
    return u;
}

// a primary in use, connected, with calls out
rrl::NodeUse busy() {
    rrl::NodeUse u = unused();
    u.context = 1;
    u.reconnect = 1;
    u.used = 1;
    u.in_flight = 2;
    return u;
}

TEST(NodeUse, FreeOnlyWhenNothingUsesOrPointsToIt) {
    rrl::NodeUse u = unused();
    EXPECT_TRUE(rrl::node_free(u));
    u.used = 1;  // once used, then out of use and closed: free again
    EXPECT_TRUE(rrl::node_free(u));

    rrl::NodeUse v;
    v = u, v.data = 0;  // a sentinel is kept
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.context = 1;
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.timer = 1;
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.reconnect = 1;
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.mapped = 1;
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.in_flight = 1;
    EXPECT_FALSE(rrl::node_free(v));
    v = u, v.batches = 1;
    EXPECT_FALSE(rrl::node_free(v));
}

TEST(NodeUse, IdleWhenOutOfUseAndNoCallWaits) {
    rrl::NodeUse u = busy();
    EXPECT_FALSE(rrl::node_idle(u));  // in use
    u.reconnect = 0;
    EXPECT_FALSE(rrl::node_idle(u));  // calls still out
    u.in_flight = 0;
    EXPECT_TRUE(rrl::node_idle(u));

    rrl::NodeUse v;
    v = u, v.used = 0;  // never used: a sentinel, or never routed to
    EXPECT_FALSE(rrl::node_idle(v));
    v = u, v.context = 0;  // closed already
    EXPECT_FALSE(rrl::node_idle(v));
    v = u, v.dropping = 1;  // being closed
    EXPECT_FALSE(rrl::node_idle(v));
    v = u, v.exiting = 1;  // the worker closes every node itself
    EXPECT_FALSE(rrl::node_idle(v));
}

TEST(NodeUse, StuckWhenOpenOwingRepliesAndSilentForATimeout) {
    rrl::NodeUse u = busy();
    EXPECT_TRUE(rrl::node_stuck(u, 1, 1000, 1000));
    EXPECT_TRUE(rrl::node_stuck(u, 1, 5000, 1000));
    EXPECT_FALSE(rrl::node_stuck(u, 1, 999, 1000));   // read lately
    EXPECT_FALSE(rrl::node_stuck(u, 0, 5000, 1000));  // circuit not open

    rrl::NodeUse v;
    v = u, v.in_flight = 0;  // owes nothing
    EXPECT_FALSE(rrl::node_stuck(v, 1, 5000, 1000));
    v = u, v.context = 0;
    EXPECT_FALSE(rrl::node_stuck(v, 1, 5000, 1000));
    v = u, v.dropping = 1;  // being dropped already
    EXPECT_FALSE(rrl::node_stuck(v, 1, 5000, 1000));
}

TEST(NodeUse, ClosedInUseIsLostAndRetried) {
    rrl::NodeUse u = busy();
    EXPECT_EQ(rrl::node_closed(u), rrl::kNodeLost | rrl::kNodeRetry);
    u.dropping = 1;  // a stuck connection dropped: still in use
    EXPECT_EQ(rrl::node_closed(u), rrl::kNodeLost | rrl::kNodeRetry);

    rrl::NodeUse v;
    v = u, v.timer = 1;  // a retry waits already
    EXPECT_EQ(rrl::node_closed(v), rrl::kNodeLost);
    v = u, v.quitting = 1;
    EXPECT_EQ(rrl::node_closed(v), rrl::kNodeLost);
    v = u, v.reconnect = 0, v.dropping = 0;  // out of use, lost anyway
    EXPECT_EQ(rrl::node_closed(v), rrl::kNodeLost);
}

TEST(NodeUse, ClosedOnPurposeIsQuiet) {
    rrl::NodeUse u = busy();
    u.reconnect = 0;
    u.dropping = 1;  // closed once idle
    EXPECT_EQ(rrl::node_closed(u), 0);
    u = busy();
    u.exiting = 1;
    EXPECT_EQ(rrl::node_closed(u), 0);
}

}  // namespace
