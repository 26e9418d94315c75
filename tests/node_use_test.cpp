// A node's use (rrl_node_use.h): which node a new address takes over, when
// an idle node closes, when a stuck connection is dropped, and what
// follows a lost connection.
#include <gtest/gtest.h>

#include "rrl_node_use.h"

namespace {

// a primary nothing uses or points to: free, not idle
rrl_node_use_t unused() {
    rrl_node_use_t u = {};
    u.data = 1;
    return u;
}

// a primary in use, connected, with calls out
rrl_node_use_t busy() {
    rrl_node_use_t u = unused();
    u.context = 1;
    u.reconnect = 1;
    u.used = 1;
    u.in_flight = 2;
    return u;
}

TEST(NodeUse, FreeOnlyWhenNothingUsesOrPointsToIt) {
    rrl_node_use_t u = unused();
    EXPECT_EQ(rrl_node_free(&u), 1);
    u.used = 1;  // once used, then out of use and closed: free again
    EXPECT_EQ(rrl_node_free(&u), 1);

    rrl_node_use_t v;
    v = u, v.data = 0;  // a sentinel is kept
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.context = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.timer = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.reconnect = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.mapped = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.in_flight = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
    v = u, v.batches = 1;
    EXPECT_EQ(rrl_node_free(&v), 0);
}

TEST(NodeUse, IdleWhenOutOfUseAndNoCallWaits) {
    rrl_node_use_t u = busy();
    EXPECT_EQ(rrl_node_idle(&u), 0);  // in use
    u.reconnect = 0;
    EXPECT_EQ(rrl_node_idle(&u), 0);  // calls still out
    u.in_flight = 0;
    EXPECT_EQ(rrl_node_idle(&u), 1);

    rrl_node_use_t v;
    v = u, v.used = 0;  // never used: a sentinel, or never routed to
    EXPECT_EQ(rrl_node_idle(&v), 0);
    v = u, v.context = 0;  // closed already
    EXPECT_EQ(rrl_node_idle(&v), 0);
    v = u, v.dropping = 1;  // being closed
    EXPECT_EQ(rrl_node_idle(&v), 0);
    v = u, v.exiting = 1;  // the worker closes every node itself
    EXPECT_EQ(rrl_node_idle(&v), 0);
}

TEST(NodeUse, StuckWhenOpenOwingRepliesAndSilentForATimeout) {
    rrl_node_use_t u = busy();
    EXPECT_EQ(rrl_node_stuck(&u, 1, 1000, 1000), 1);
    EXPECT_EQ(rrl_node_stuck(&u, 1, 5000, 1000), 1);
    EXPECT_EQ(rrl_node_stuck(&u, 1, 999, 1000), 0);   // read lately
    EXPECT_EQ(rrl_node_stuck(&u, 0, 5000, 1000), 0);  // circuit not open

    rrl_node_use_t v;
    v = u, v.in_flight = 0;  // owes nothing
    EXPECT_EQ(rrl_node_stuck(&v, 1, 5000, 1000), 0);
    v = u, v.context = 0;
    EXPECT_EQ(rrl_node_stuck(&v, 1, 5000, 1000), 0);
    v = u, v.dropping = 1;  // being dropped already
    EXPECT_EQ(rrl_node_stuck(&v, 1, 5000, 1000), 0);
}

TEST(NodeUse, ClosedInUseIsLostAndRetried) {
    rrl_node_use_t u = busy();
    EXPECT_EQ(rrl_node_closed(&u), RRL_NODE_LOST | RRL_NODE_RETRY);
    u.dropping = 1;  // a stuck connection dropped: still in use
    EXPECT_EQ(rrl_node_closed(&u), RRL_NODE_LOST | RRL_NODE_RETRY);

    rrl_node_use_t v;
    v = u, v.timer = 1;  // a retry waits already
    EXPECT_EQ(rrl_node_closed(&v), RRL_NODE_LOST);
    v = u, v.quitting = 1;
    EXPECT_EQ(rrl_node_closed(&v), RRL_NODE_LOST);
    v = u, v.reconnect = 0, v.dropping = 0;  // out of use, lost anyway
    EXPECT_EQ(rrl_node_closed(&v), RRL_NODE_LOST);
}

TEST(NodeUse, ClosedOnPurposeIsQuiet) {
    rrl_node_use_t u = busy();
    u.reconnect = 0;
    u.dropping = 1;  // closed once idle
    EXPECT_EQ(rrl_node_closed(&u), 0);
    u = busy();
    u.exiting = 1;
    EXPECT_EQ(rrl_node_closed(&u), 0);
}

}  // namespace
