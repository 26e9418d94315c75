// Each part's way to Redis (rrl_call_* and rrl_batch_count/resent): a call
// asks each node's breaker once, and every half-open probe has an exit:
// answered, abandoned when not sent, or a failure on a timeout, each node
// counted once; a detached call keeps its timer only for a probe out.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rrl_call.h"

namespace {

int zone, node_a, node_b;

using Call = std::unique_ptr<rrl_call_t, void (*)(rrl_call_t*)>;
using Batch = std::unique_ptr<rrl_batch_t, void (*)(rrl_batch_t*)>;

// a Cluster call of three parts: "{1}", "{2}" and "{3}" hash apart
Call three_parts() {
    std::vector<std::string> args{"EVALSHA", "s", "3", "{1}", "{2}", "{3}",
                                  ""};
    for (int j = 0; j < 3; j++) {
        args.insert(args.end(), {"2", "10", "1000", "0", "1"});
    }
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    for (const std::string& a : args) {
        argv.push_back(a.data());
        argvlen.push_back(a.size());
    }
    const void* zones[] = {&zone, &zone, &zone};
    Call c(rrl_call_new(static_cast<int>(argv.size()), argv.data(),
                        argvlen.data(), zones, 3, 1),
           rrl_call_free);
    EXPECT_EQ(rrl_call_parts(c.get()), 3u);
    return c;
}

// parts 0 and 2 on node a, 1 on b
Call routed() {
    Call c = three_parts();
    rrl_call_set_node(c.get(), 0, &node_a);
    rrl_call_set_node(c.get(), 1, &node_b);
    rrl_call_set_node(c.get(), 2, &node_a);
    return c;
}

Batch batch_of(rrl_call_t* c, size_t part) {
    Batch b(rrl_batch_new(), rrl_batch_free);
    EXPECT_EQ(rrl_batch_add(b.get(), c, part, c), RRL_OK);
    return b;
}

TEST(CallProbe, ANodeIsAskedOnceACall) {
    Call c = routed();
    EXPECT_EQ(rrl_call_node(c.get(), 1), &node_b);
    EXPECT_EQ(rrl_call_asks(c.get(), 0), 1);
    EXPECT_EQ(rrl_call_asks(c.get(), 1), 1);
    EXPECT_EQ(rrl_call_asks(c.get(), 2), 0);
    rrl_call_set_probe(c.get(), 1);
    EXPECT_EQ(rrl_call_probe(c.get(), 1), 1);
    EXPECT_EQ(rrl_call_probe(c.get(), 0), 0);
}

TEST(CallProbe, CarriesTheCallersCall) {
    Call c = routed();
    EXPECT_EQ(rrl_call_data(c.get()), nullptr);
    rrl_call_set_data(c.get(), &node_a);
    EXPECT_EQ(rrl_call_data(c.get()), &node_a);
}

TEST(CallProbe, AnsweredPartsAndPending) {
    Call c = routed();
    EXPECT_EQ(rrl_call_pending(c.get()), 3u);
    EXPECT_EQ(rrl_call_answer(c.get(), 1), 2u);
    EXPECT_EQ(rrl_call_awaited(c.get(), 1), 0);
    EXPECT_EQ(rrl_call_awaited(c.get(), 0), 1);
    EXPECT_EQ(rrl_call_answer(c.get(), 0), 1u);
    EXPECT_EQ(rrl_call_answer(c.get(), 2), 0u);
}

TEST(CallProbe, InAndOutOfBatches) {
    Call c = routed();
    Batch b0 = batch_of(c.get(), 0), b1 = batch_of(c.get(), 1);
    EXPECT_EQ(rrl_call_in_batches(c.get()), 2u);
    EXPECT_EQ(rrl_batch_data(b1.get(), 0), c.get());
    EXPECT_EQ(rrl_batch_part(b1.get(), 0), 1u);
    EXPECT_EQ(rrl_call_out(c.get(), 0), 1);  // awaited
    rrl_call_answer(c.get(), 1);
    EXPECT_EQ(rrl_call_out(c.get(), 1), 0);  // answered meanwhile
    EXPECT_EQ(rrl_call_in_batches(c.get()), 0u);
}

TEST(CallProbe, AProbeNotSentIsAbandonedOnce) {
    Call c = routed();
    rrl_call_set_probe(c.get(), 0);
    EXPECT_EQ(rrl_call_unsent(c.get(), 1), 0);  // no probe
    EXPECT_EQ(rrl_call_unsent(c.get(), 0), 1);
    EXPECT_EQ(rrl_call_unsent(c.get(), 0), 0);
}

TEST(CallProbe, ABatchCountsOnceForTheBreaker) {
    Call c = routed();
    Batch b = batch_of(c.get(), 0);
    EXPECT_EQ(rrl_batch_count(b.get()), 1);
    EXPECT_EQ(rrl_batch_count(b.get()), 0);
    // sent again elsewhere: counted anew, no probe
    rrl_call_set_probe(c.get(), 0);
    rrl_batch_resent(b.get(), &node_b);
    EXPECT_EQ(rrl_call_node(c.get(), 0), &node_b);
    EXPECT_EQ(rrl_call_probe(c.get(), 0), 0);
    EXPECT_EQ(rrl_batch_count(b.get()), 1);
    // a part counted already is not abandoned
    EXPECT_EQ(rrl_call_unsent(c.get(), 0), 0);
}

TEST(CallProbe, ATimeoutFailsEachNodeOnce) {
    Call c = routed();
    rrl_call_answer(c.get(), 0);
    EXPECT_EQ(rrl_call_time_out(c.get()), 1u);  // the first left
    EXPECT_EQ(rrl_call_pending(c.get()), 0u);
    EXPECT_EQ(rrl_call_fails(c.get(), 0), 1);  // node a
    EXPECT_EQ(rrl_call_fails(c.get(), 1), 1);  // node b
    EXPECT_EQ(rrl_call_fails(c.get(), 2), 0);  // node a again
    EXPECT_EQ(rrl_call_fails(c.get(), 0), 0);  // once
    EXPECT_EQ(rrl_call_time_out(c.get()), 3u);  // none left
}

TEST(CallProbe, ATimeoutSkipsNodesCountedAlready) {
    Call c = routed();
    Batch b = batch_of(c.get(), 1);
    rrl_batch_count(b.get());  // b's batch replied
    rrl_call_time_out(c.get());
    EXPECT_EQ(rrl_call_fails(c.get(), 1), 0);
    EXPECT_EQ(rrl_call_fails(c.get(), 0), 1);
}

TEST(CallProbe, ADetachedCallKeepsItsTimerForAProbeOut) {
    Call c = routed();
    rrl_call_set_probe(c.get(), 1);
    Batch b0 = batch_of(c.get(), 0), b1 = batch_of(c.get(), 1);
    EXPECT_EQ(rrl_call_probe_out(c.get()), 1);
    rrl_call_detach(c.get());
    EXPECT_EQ(rrl_call_awaited(c.get(), 0), 0);
    EXPECT_EQ(rrl_call_probe_lost(c.get(), 0), 0);  // no probe
    EXPECT_EQ(rrl_call_probe_lost(c.get(), 1), 1);  // a failure
    EXPECT_EQ(rrl_call_probe_lost(c.get(), 1), 0);  // once
    EXPECT_EQ(rrl_call_probe_out(c.get()), 0);
}

TEST(CallProbe, AProbeSeenOrOutOfItsBatchIsNotOut) {
    Call c = routed();
    rrl_call_set_probe(c.get(), 0);
    EXPECT_EQ(rrl_call_probe_out(c.get()), 0);  // not in a batch
    Batch b = batch_of(c.get(), 0);
    EXPECT_EQ(rrl_call_probe_out(c.get()), 1);
    rrl_batch_count(b.get());
    EXPECT_EQ(rrl_call_probe_out(c.get()), 0);
}

TEST(CallProbe, NoSuchPart) {
    Call c = routed();
    rrl_call_set_node(c.get(), 3, &node_a);
    rrl_call_set_probe(c.get(), 3);
    EXPECT_EQ(rrl_call_node(c.get(), 3), nullptr);
    EXPECT_EQ(rrl_call_asks(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_probe(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_out(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_awaited(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_answer(c.get(), 3), 0u);
    EXPECT_EQ(rrl_call_unsent(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_fails(c.get(), 3), 0);
    EXPECT_EQ(rrl_call_probe_lost(c.get(), 3), 0);
    Batch b(rrl_batch_new(), rrl_batch_free);
    EXPECT_EQ(rrl_batch_part(b.get(), 0), 0u);
}

}  // namespace
