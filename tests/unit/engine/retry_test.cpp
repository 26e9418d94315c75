// What a batch's reply leads to (retry.hpp): sent again once after
// NOSCRIPT and once after MOVED or ASK; counted by the breaker as Redis
// answering or not; whom to ask who serves now.
#include "engine/retry.hpp"

#include <gtest/gtest.h>

#include "api/rrl.h"

namespace {

TEST(Retry, NoscriptLoadsTheScriptOnce) {
    EXPECT_EQ(rrl::retry_action(RRL_REPLY_NOSCRIPT, false, false),
              rrl::RetryAction::load_script);
    EXPECT_EQ(rrl::retry_action(RRL_REPLY_NOSCRIPT, false, true),
              rrl::RetryAction::load_script);
    EXPECT_EQ(rrl::retry_action(RRL_REPLY_NOSCRIPT, true, false),
              rrl::RetryAction::answer);
}

TEST(Retry, MovedAndAskRedirectOnce) {
    for (int kind : {RRL_REPLY_MOVED, RRL_REPLY_ASK}) {
        EXPECT_EQ(rrl::retry_action(kind, false, false),
                  rrl::RetryAction::redirect);
        EXPECT_EQ(rrl::retry_action(kind, true, false),
                  rrl::RetryAction::redirect);
        EXPECT_EQ(rrl::retry_action(kind, false, true),
                  rrl::RetryAction::answer);
    }
}

TEST(Retry, OtherRepliesAreAnswered) {
    for (int kind :
         {RRL_REPLY_ERROR, RRL_REPLY_TRYAGAIN, RRL_REPLY_CLUSTERDOWN,
          RRL_REPLY_READONLY, RRL_REPLY_MASTERDOWN, RRL_REPLY_LOADING}) {
        EXPECT_EQ(rrl::retry_action(kind, false, false),
                  rrl::RetryAction::answer)
            << kind;
    }
}

TEST(Retry, TheBreakerCountsRedisAnswering) {
    EXPECT_TRUE(rrl::retry_counts_ok(true, true, RRL_REPLY_ERROR));
    EXPECT_TRUE(rrl::retry_counts_ok(true, false, RRL_REPLY_NOSCRIPT));
    EXPECT_TRUE(rrl::retry_counts_ok(true, false, RRL_REPLY_MOVED));
    EXPECT_TRUE(rrl::retry_counts_ok(true, false, RRL_REPLY_ASK));
    EXPECT_FALSE(rrl::retry_counts_ok(true, false, RRL_REPLY_ERROR));
    EXPECT_FALSE(rrl::retry_counts_ok(true, false, RRL_REPLY_LOADING));
    EXPECT_FALSE(rrl::retry_counts_ok(true, false, RRL_REPLY_READONLY));
    EXPECT_FALSE(rrl::retry_counts_ok(false, false, RRL_REPLY_ERROR));  // lost
}

TEST(Retry, WhomToAsk) {
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_READONLY), rrl::RetryAsk::sentinel);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_MASTERDOWN), rrl::RetryAsk::sentinel);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_CLUSTERDOWN), rrl::RetryAsk::cluster);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_MOVED), rrl::RetryAsk::cluster);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_ASK), rrl::RetryAsk::cluster);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_NOSCRIPT), rrl::RetryAsk::nobody);
    EXPECT_EQ(rrl::retry_ask(RRL_REPLY_ERROR), rrl::RetryAsk::nobody);
}

}  // namespace
