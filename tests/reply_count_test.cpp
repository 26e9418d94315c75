// The replies a connection is owed (rrl_reply_count_*): one top-level reply
// per command sent, elements free, and the first reply too many caught.
#include <gtest/gtest.h>

#include "rrl_reply_count.h"

namespace {

TEST(ReplyCount, StartsWithNothingOwed) {
    rrl_reply_count_t rc;
    rc.sent = 7;
    rc.replies = 9;
    rc.unsolicited = 1;
    rrl_reply_count_init(&rc);
    EXPECT_EQ(rc.sent, 0u);
    EXPECT_EQ(rc.replies, 0u);
    EXPECT_EQ(rc.unsolicited, 0);
}

TEST(ReplyCount, AReplyNoCommandAwaitsIsCaught) {
    rrl_reply_count_t rc;
    rrl_reply_count_init(&rc);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 0);
    EXPECT_EQ(rc.unsolicited, 1);
}

TEST(ReplyCount, EachCommandIsOwedOneReply) {
    rrl_reply_count_t rc;
    rrl_reply_count_init(&rc);
    rrl_reply_count_sent(&rc);
    rrl_reply_count_sent(&rc);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 1);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 1);
    EXPECT_EQ(rc.unsolicited, 0);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 0);
    EXPECT_EQ(rc.unsolicited, 1);
}

TEST(ReplyCount, ElementsOfAReplyAreNotCounted) {
    rrl_reply_count_t rc;
    rrl_reply_count_init(&rc);
    rrl_reply_count_sent(&rc);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 1);
    for (int i = 0; i < 100; i++) EXPECT_EQ(rrl_reply_count_read(&rc, 1), 1);
    EXPECT_EQ(rc.replies, 1u);
    EXPECT_EQ(rc.unsolicited, 0);
}

TEST(ReplyCount, RepliesMayLagBehindCommands) {
    rrl_reply_count_t rc;
    rrl_reply_count_init(&rc);
    for (int i = 0; i < 3; i++) rrl_reply_count_sent(&rc);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 1);
    rrl_reply_count_sent(&rc);
    for (int i = 0; i < 3; i++) EXPECT_EQ(rrl_reply_count_read(&rc, 0), 1);
    EXPECT_EQ(rrl_reply_count_read(&rc, 0), 0);
}

}  // namespace
