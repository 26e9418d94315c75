// The refresher (refresher.hpp): when CLUSTER SLOTS or a Sentinel
// question is sent again, with the settings the shim uses: Cluster (100 ms,
// 500 ms after 2 failures, no poll), Sentinel (100 ms, 500 ms after one
// failure per sentinel, a poll every second), and which target is next.
// A fake shim records what is sent and how its timer is set.
#include "topology/refresher.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

struct Shim {
    rrl::Refresher r;
    std::vector<std::uint64_t> sent;  // generations
    std::vector<std::uint64_t> timers;
    bool send_result = true;
    std::int64_t now = 1000;
    bool want_while_sending = false;

    static bool send(void* data, std::uint64_t generation) {
        auto* shim = static_cast<Shim*>(data);
        shim->sent.push_back(generation);
        if (shim->want_while_sending) shim->r.want(shim->now);
        return shim->send_result;
    }

    static void timer(void* data, std::uint64_t ms) {
        static_cast<Shim*>(data)->timers.push_back(ms);
    }

    explicit Shim(bool sentinel, std::uint64_t sentinels = 3) {
        rrl::RefresherConf conf = {100,  500,  sentinels, 1000, 3000,
                                   true, send, timer,     this};
        if (!sentinel) {
            conf.quick = 2;
            conf.poll_ms = 0;
            conf.rotate = false;
        }
        r = rrl::Refresher(conf);
    }

    void want() { r.want(now); }
    std::uint64_t timer_ms() const {
        return timers.empty() ? 999 : timers.back();
    }
    // the timer fires after ms
    int fire() {
        now += static_cast<std::int64_t>(timer_ms());
        return r.fired();
    }
};

TEST(Refresher, TheFirstQuestionGoesAtOnceWithItsTimeout) {
    Shim s(false);
    s.want();
    ASSERT_EQ(s.sent.size(), 1u);
    EXPECT_EQ(s.sent[0], 1u);
    EXPECT_EQ(s.timers, std::vector<std::uint64_t>{3000});
    EXPECT_TRUE(s.r.asking);
}

TEST(Refresher, OneOutAtATimeAndWantedAgainAfterIt) {
    Shim s(false);
    s.want();
    s.now += 10;
    s.want();
    EXPECT_EQ(s.sent.size(), 1u);
    EXPECT_TRUE(s.r.again);
    EXPECT_TRUE(s.r.answer(1));
    EXPECT_EQ(s.timers.back(), 0u);  // the timeout canceled
    EXPECT_TRUE(s.r.answered());
    EXPECT_FALSE(s.r.again);
    // the question wanted meanwhile waits for the rest of min_ms
    s.now += 20;
    s.want();
    EXPECT_EQ(s.sent.size(), 1u);
    EXPECT_EQ(s.timer_ms(), 70u);
    EXPECT_EQ(s.fire(), 0);
    s.want();
    EXPECT_EQ(s.sent.size(), 2u);
}

TEST(Refresher, AtMostOncePerMinimumInterval) {
    Shim s(false);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    EXPECT_FALSE(s.r.answered());
    s.now += 99;
    s.want();
    EXPECT_EQ(s.timer_ms(), 1u);
    // a burst of MOVED while the delay runs sets nothing more
    std::size_t timers = s.timers.size();
    s.want();
    s.want();
    EXPECT_EQ(s.timers.size(), timers);
    EXPECT_FALSE(s.r.again);
    EXPECT_EQ(s.fire(), 0);
    s.want();
    EXPECT_EQ(s.sent.size(), 2u);
}

TEST(Refresher, ClockGoingBackDoesNotThrottle) {
    Shim s(false);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    s.now -= 100;
    s.want();
    EXPECT_EQ(s.sent.size(), 2u);
}

TEST(Refresher, StaleOrUnawaitedAnswersAreIgnored) {
    Shim s(false);
    s.want();
    EXPECT_FALSE(s.r.answer(2));
    EXPECT_TRUE(s.r.asking);
    EXPECT_TRUE(s.r.answer(1));
    EXPECT_FALSE(s.r.answer(1));  // not twice
}

TEST(Refresher, TimeoutGivesUpTheQuestion) {
    Shim s(false);
    s.want();
    EXPECT_EQ(s.fire(), 1);
    EXPECT_FALSE(s.r.asking);
    EXPECT_FALSE(s.r.answer(1));  // late
    s.r.failed();
    EXPECT_EQ(s.timer_ms(), 100u);
    EXPECT_EQ(s.fire(), 0);  // the delay's end is no timeout
}

TEST(Refresher, ClusterRetriesQuicklyTwiceThenSlower) {
    Shim s(false);
    for (std::uint64_t expected : {100u, 100u, 500u, 500u}) {
        s.want();
        ASSERT_EQ(s.fire(), 1);
        s.r.failed();
        EXPECT_EQ(s.timer_ms(), expected);
        ASSERT_EQ(s.fire(), 0);
    }
    EXPECT_EQ(s.r.next_target, 0u);  // no rotation on failure
    s.want();
    ASSERT_TRUE(s.r.answer(s.sent.back()));
    EXPECT_FALSE(s.r.answered());
    EXPECT_EQ(s.r.failures, 0u);
    s.r.failed();
    EXPECT_EQ(s.timer_ms(), 100u);
}

TEST(Refresher, AQuestionNotSentIsAFailure) {
    Shim s(false);
    s.send_result = false;
    s.want();
    EXPECT_EQ(s.sent.size(), 1u);
    EXPECT_FALSE(s.r.asking);
    EXPECT_EQ(s.r.failures, 1u);
    EXPECT_EQ(s.timer_ms(), 100u);
}

TEST(Refresher, AFailureWhileTheTimerIsSetWaitsForIt) {
    Shim s(false);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    s.want();  // the delay
    std::size_t timers = s.timers.size();
    s.r.failed();
    EXPECT_EQ(s.timers.size(), timers);
    EXPECT_EQ(s.r.failures, 0u);
}

TEST(Refresher, AFailureForgetsTheQuestionWantedMeanwhile) {
    Shim s(false);
    s.want();
    s.want();
    ASSERT_TRUE(s.r.again);
    ASSERT_EQ(s.fire(), 1);
    s.r.failed();
    EXPECT_FALSE(s.r.again);
}

TEST(Refresher, WantedWhileSendingIsAskedAgainAfterIt) {
    Shim s(false);
    s.want_while_sending = true;
    s.want();
    EXPECT_EQ(s.sent.size(), 1u);
    EXPECT_TRUE(s.r.again);
}

TEST(Refresher, SentinelRotatesOnFailureAndEachIsRetriedQuickly) {
    Shim s(true, 3);
    EXPECT_EQ(s.r.target(3, false), 0u);
    for (std::uint64_t expected : {100u, 100u, 100u, 500u}) {
        s.want();
        ASSERT_EQ(s.fire(), 1);
        s.r.failed();
        EXPECT_EQ(s.timer_ms(), expected);
        ASSERT_EQ(s.fire(), 0);
    }
    EXPECT_EQ(s.r.target(3, false), 1u);  // 4 failures, 3 of them
    // rotation happens even while the timer is set
    s.want();
    ASSERT_TRUE(s.r.answer(s.sent.back()));
    s.want();
    s.r.failed();
    EXPECT_EQ(s.r.target(3, false), 2u);
}

TEST(Refresher, SentinelPollsAfterEachAnswer) {
    Shim s(true);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    EXPECT_FALSE(s.r.answered());
    EXPECT_EQ(s.timer_ms(), 1000u);
    EXPECT_TRUE(s.r.polling);
    // the poll is due: no timeout
    EXPECT_EQ(s.fire(), 0);
    EXPECT_FALSE(s.r.polling);
    s.want();
    EXPECT_EQ(s.sent.size(), 2u);
}

TEST(Refresher, SentinelAsksAtOnceInsteadOfThePoll) {
    Shim s(true);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    ASSERT_FALSE(s.r.answered());
    // the primary is lost: the poll is replaced by a delay of min_ms
    s.now += 40;
    s.want();
    EXPECT_EQ(s.timer_ms(), 60u);
    EXPECT_FALSE(s.r.polling);
    std::size_t timers = s.timers.size();
    s.want();
    EXPECT_EQ(s.timers.size(), timers);
    s.now += 500;
    ASSERT_FALSE(s.r.answer(1));
    // and after min_ms at once, canceling the poll
    Shim t(true);
    t.want();
    ASSERT_TRUE(t.r.answer(1));
    ASSERT_FALSE(t.r.answered());
    t.now += 400;
    t.want();
    EXPECT_EQ(t.sent.size(), 2u);
    EXPECT_EQ(t.timers, (std::vector<std::uint64_t>{3000, 0, 1000, 0, 3000}));
}

TEST(Refresher, NoPollWhenTheTimerIsSetAlready) {
    Shim s(true);
    s.want();
    ASSERT_TRUE(s.r.answer(1));
    s.want();  // a delay, set before the answer is dealt with
    std::size_t timers = s.timers.size();
    EXPECT_FALSE(s.r.answered());
    EXPECT_EQ(s.timers.size(), timers);
    EXPECT_FALSE(s.r.polling);
}

TEST(Refresher, ClusterTakesSeedsInTurn) {
    Shim s(false);
    EXPECT_EQ(s.r.target(2, true), 0u);
    EXPECT_EQ(s.r.target(2, true), 1u);
    EXPECT_EQ(s.r.target(2, true), 0u);
    EXPECT_EQ(s.r.target(0, true), 0u);  // none: no division
}

TEST(Refresher, StoppedItAsksNothingMore) {
    Shim s(true);
    s.want();
    s.r.stop();
    EXPECT_EQ(s.timers.back(), 0u);
    EXPECT_FALSE(s.r.asking);
    EXPECT_FALSE(s.r.answer(1));
    s.want();
    s.r.failed();
    EXPECT_FALSE(s.r.answered());
    EXPECT_EQ(s.sent.size(), 1u);
    EXPECT_EQ(s.timers.size(), 2u);
    s.r.stop();  // no timer: nothing to cancel
    EXPECT_EQ(s.timers.size(), 2u);
}

}  // namespace
