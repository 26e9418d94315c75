// The replies a connection is owed (rrl::ReplyCount): one top-level reply
// per command sent, elements free, and the first reply too many caught.
#include "engine/owed_replies.hpp"

#include <gtest/gtest.h>

namespace {

TEST(ReplyCount, StartsWithNothingOwed) {
    rrl::ReplyCount rc;
    rc.sent = 7;
    rc.replies = 9;
    rc.unsolicited = true;
    rc.reset();
    EXPECT_EQ(rc.sent, 0u);
    EXPECT_EQ(rc.replies, 0u);
    EXPECT_FALSE(rc.unsolicited);
}

TEST(ReplyCount, AReplyNoCommandAwaitsIsCaught) {
    rrl::ReplyCount rc;
    rc.reset();
    EXPECT_EQ(rc.read(false), false);
    EXPECT_TRUE(rc.unsolicited);
}

TEST(ReplyCount, EachCommandIsOwedOneReply) {
    rrl::ReplyCount rc;
    rc.reset();
    rc.command();
    rc.command();
    EXPECT_EQ(rc.read(false), true);
    EXPECT_EQ(rc.read(false), true);
    EXPECT_FALSE(rc.unsolicited);
    EXPECT_EQ(rc.read(false), false);
    EXPECT_TRUE(rc.unsolicited);
}

TEST(ReplyCount, ElementsOfAReplyAreNotCounted) {
    rrl::ReplyCount rc;
    rc.reset();
    rc.command();
    EXPECT_EQ(rc.read(false), true);
    for (int i = 0; i < 100; i++) EXPECT_EQ(rc.read(true), true);
    EXPECT_EQ(rc.replies, 1u);
    EXPECT_FALSE(rc.unsolicited);
}

TEST(ReplyCount, RepliesMayLagBehindCommands) {
    rrl::ReplyCount rc;
    rc.reset();
    for (int i = 0; i < 3; i++) rc.command();
    EXPECT_EQ(rc.read(false), true);
    rc.command();
    for (int i = 0; i < 3; i++) EXPECT_EQ(rc.read(false), true);
    EXPECT_EQ(rc.read(false), false);
}

}  // namespace
