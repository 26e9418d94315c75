// What a batch's reply leads to (rrl_retry_*): sent again once after
// NOSCRIPT and once after MOVED or ASK; counted by the breaker as Redis
// answering or not; whom to ask who serves now.
#include <gtest/gtest.h>

#include "rrl_call.h"

namespace {

TEST(Retry, NoscriptLoadsTheScriptOnce) {
    EXPECT_EQ(rrl_retry_action(RRL_REPLY_NOSCRIPT, 0, 0),
              RRL_RETRY_LOAD_SCRIPT);
    EXPECT_EQ(rrl_retry_action(RRL_REPLY_NOSCRIPT, 0, 1),
              RRL_RETRY_LOAD_SCRIPT);
    EXPECT_EQ(rrl_retry_action(RRL_REPLY_NOSCRIPT, 1, 0), RRL_RETRY_ANSWER);
}

TEST(Retry, MovedAndAskRedirectOnce) {
    for (int kind : {RRL_REPLY_MOVED, RRL_REPLY_ASK}) {
        EXPECT_EQ(rrl_retry_action(kind, 0, 0), RRL_RETRY_REDIRECT);
        EXPECT_EQ(rrl_retry_action(kind, 1, 0), RRL_RETRY_REDIRECT);
        EXPECT_EQ(rrl_retry_action(kind, 0, 1), RRL_RETRY_ANSWER);
    }
}

TEST(Retry, OtherRepliesAreAnswered) {
    for (int kind :
         {RRL_REPLY_ERROR, RRL_REPLY_TRYAGAIN, RRL_REPLY_CLUSTERDOWN,
          RRL_REPLY_READONLY, RRL_REPLY_MASTERDOWN, RRL_REPLY_LOADING}) {
        EXPECT_EQ(rrl_retry_action(kind, 0, 0), RRL_RETRY_ANSWER) << kind;
    }
}

TEST(Retry, TheBreakerCountsRedisAnswering) {
    EXPECT_EQ(rrl_retry_counts_ok(1, 1, RRL_REPLY_ERROR), 1);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_NOSCRIPT), 1);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_MOVED), 1);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_ASK), 1);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_ERROR), 0);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_LOADING), 0);
    EXPECT_EQ(rrl_retry_counts_ok(1, 0, RRL_REPLY_READONLY), 0);
    EXPECT_EQ(rrl_retry_counts_ok(0, 0, RRL_REPLY_ERROR), 0);  // lost
}

TEST(Retry, WhomToAsk) {
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_READONLY), RRL_RETRY_ASK_SENTINEL);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_MASTERDOWN), RRL_RETRY_ASK_SENTINEL);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_CLUSTERDOWN), RRL_RETRY_ASK_CLUSTER);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_MOVED), RRL_RETRY_ASK_CLUSTER);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_ASK), RRL_RETRY_ASK_CLUSTER);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_NOSCRIPT), RRL_RETRY_ASK_NOBODY);
    EXPECT_EQ(rrl_retry_ask(RRL_REPLY_ERROR), RRL_RETRY_ASK_NOBODY);
}

}  // namespace
