// Each part's way to Redis (Call, and Batch::count() and resent()): a call
// asks each node's breaker once, and every half-open probe has an exit:
// answered, abandoned when not sent, or a failure on a timeout, each node
// counted once; a detached call keeps its timer only for a probe out.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch.hpp"
#include "engine/call_plan.hpp"
#include "tests/support/test_call.hpp"

namespace {

int zone, node_a, node_b;

using Call = std::unique_ptr<rrl::Call>;
using Batch = std::unique_ptr<rrl::Batch>;

// a Cluster call of three parts: "{1}", "{2}" and "{3}" hash apart
Call three_parts() {
    Call c = rrl_test::call_of(
        {{"{1}", &zone, RRL_SLIDING_WINDOW, 10, 1000, 0, 1},
         {"{2}", &zone, RRL_SLIDING_WINDOW, 10, 1000, 0, 1},
         {"{3}", &zone, RRL_SLIDING_WINDOW, 10, 1000, 0, 1}},
        "", true);
    EXPECT_EQ(c->parts(), 3u);
    return c;
}

// parts 0 and 2 on node a, 1 on b
Call routed() {
    Call c = three_parts();
    c->set_node(0, &node_a);
    c->set_node(1, &node_b);
    c->set_node(2, &node_a);
    return c;
}

Batch batch_of(rrl::Call* c, size_t part) {
    Batch b = std::make_unique<rrl::Batch>();
    EXPECT_FALSE(b->add(*c, part, c));
    return b;
}

TEST(CallProbe, ANodeIsAskedOnceACall) {
    Call c = routed();
    EXPECT_EQ(c->node(1), &node_b);
    EXPECT_TRUE(c->asks(0));
    EXPECT_TRUE(c->asks(1));
    EXPECT_FALSE(c->asks(2));
    c->set_probe(1);
    EXPECT_TRUE(c->probe(1));
    EXPECT_FALSE(c->probe(0));
}

// the engine finds a part's call by its batch entry's data
TEST(CallProbe, CarriesTheCallersCall) {
    Call c = routed();
    rrl::Batch b;
    EXPECT_FALSE(b.add(*c, 1, &node_a));
    EXPECT_EQ(b.data(0), &node_a);
    EXPECT_EQ(b.part(0), 1u);
}

TEST(CallProbe, AnsweredPartsAndPending) {
    Call c = routed();
    EXPECT_EQ(c->pending(), 3u);
    EXPECT_EQ(c->answer(1), 2u);
    EXPECT_FALSE(c->awaited(1));
    EXPECT_TRUE(c->awaited(0));
    EXPECT_EQ(c->answer(0), 1u);
    EXPECT_EQ(c->answer(2), 0u);
}

TEST(CallProbe, InAndOutOfBatches) {
    Call c = routed();
    Batch b0 = batch_of(c.get(), 0), b1 = batch_of(c.get(), 1);
    EXPECT_EQ(c->in_batches(), 2u);
    EXPECT_EQ(b1->data(0), c.get());
    EXPECT_EQ(b1->part(0), 1u);
    EXPECT_TRUE(c->out(0));  // awaited
    c->answer(1);
    EXPECT_FALSE(c->out(1));  // answered meanwhile
    EXPECT_EQ(c->in_batches(), 0u);
}

TEST(CallProbe, AProbeNotSentIsAbandonedOnce) {
    Call c = routed();
    c->set_probe(0);
    EXPECT_FALSE(c->unsent(1));  // no probe
    EXPECT_TRUE(c->unsent(0));
    EXPECT_FALSE(c->unsent(0));
}

TEST(CallProbe, ABatchCountsOnceForTheBreaker) {
    Call c = routed();
    Batch b = batch_of(c.get(), 0);
    EXPECT_TRUE(b->count());
    EXPECT_FALSE(b->count());
    // sent again elsewhere: counted anew, no probe
    c->set_probe(0);
    b->resent(&node_b);
    EXPECT_EQ(c->node(0), &node_b);
    EXPECT_FALSE(c->probe(0));
    EXPECT_TRUE(b->count());
    // a part counted already is not abandoned
    EXPECT_FALSE(c->unsent(0));
}

TEST(CallProbe, ATimeoutFailsEachNodeOnce) {
    Call c = routed();
    c->answer(0);
    EXPECT_EQ(c->time_out(), 1u);  // the first left
    EXPECT_EQ(c->pending(), 0u);
    EXPECT_TRUE(c->fails(0));      // node a
    EXPECT_TRUE(c->fails(1));      // node b
    EXPECT_FALSE(c->fails(2));     // node a again
    EXPECT_FALSE(c->fails(0));     // once
    EXPECT_EQ(c->time_out(), 3u);  // none left
}

TEST(CallProbe, ATimeoutSkipsNodesCountedAlready) {
    Call c = routed();
    Batch b = batch_of(c.get(), 1);
    b->count();  // b's batch replied
    c->time_out();
    EXPECT_FALSE(c->fails(1));
    EXPECT_TRUE(c->fails(0));
}

TEST(CallProbe, ADetachedCallKeepsItsTimerForAProbeOut) {
    Call c = routed();
    c->set_probe(1);
    Batch b0 = batch_of(c.get(), 0), b1 = batch_of(c.get(), 1);
    EXPECT_TRUE(c->probe_out());
    c->detach();
    EXPECT_FALSE(c->awaited(0));
    EXPECT_FALSE(c->probe_lost(0));  // no probe
    EXPECT_TRUE(c->probe_lost(1));   // a failure
    EXPECT_FALSE(c->probe_lost(1));  // once
    EXPECT_FALSE(c->probe_out());
}

TEST(CallProbe, AProbeSeenOrOutOfItsBatchIsNotOut) {
    Call c = routed();
    c->set_probe(0);
    EXPECT_FALSE(c->probe_out());  // not in a batch
    Batch b = batch_of(c.get(), 0);
    EXPECT_TRUE(c->probe_out());
    b->count();
    EXPECT_FALSE(c->probe_out());
}

TEST(CallProbe, NoSuchPart) {
    Call c = routed();
    EXPECT_THROW(c->set_node(3, &node_a), std::out_of_range);
    EXPECT_THROW(c->set_probe(3), std::out_of_range);
    EXPECT_THROW(c->node(3), std::out_of_range);
    EXPECT_THROW(c->asks(3), std::out_of_range);
    EXPECT_THROW(c->probe(3), std::out_of_range);
    EXPECT_THROW(c->out(3), std::out_of_range);
    EXPECT_THROW(c->awaited(3), std::out_of_range);
    EXPECT_THROW(c->answer(3), std::out_of_range);
    EXPECT_THROW(c->unsent(3), std::out_of_range);
    EXPECT_THROW(c->fails(3), std::out_of_range);
    EXPECT_THROW(c->probe_lost(3), std::out_of_range);
    rrl::Batch b;
    EXPECT_THROW(b.part(0), std::out_of_range);
}

}  // namespace
