// A batch (Batch, OpenBatches): its bounds, the EVALSHA of the batch form byte
// for byte as the engine sends it, each request's share of the reply, and the
// parts left out before it is sent.
#include "engine/batch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/open_batches.hpp"
#include "engine/resp.hpp"
#include "engine/retry.hpp"
#include "base/rrl_types.h"
#include "lease/settle.hpp"
#include "tests/support/test_call.hpp"

namespace {

using rrl_test::call_of;
using Limit = rrl_test::PlannedLimit;

int zone_a, zone_b, zone_lease;

// n limits with keys prefix0.., zone a (sliding_window 10 per 1000 ms,
// burst 3) then b (fixed_window 5 per 60000 ms) in turn, costs 1..5
std::unique_ptr<rrl::Call> plan(const std::string& prefix, std::size_t n,
                                bool cluster = false) {
    std::vector<Limit> limits;
    for (std::size_t j = 0; j < n; j++) {
        std::uint64_t cost = j % 5 + 1;
        if (j % 2) {
            limits.push_back({prefix + std::to_string(j), &zone_b,
                              RRL_FIXED_WINDOW, 5, 60000, 0, cost});
        } else {
            limits.push_back({prefix + std::to_string(j), &zone_a,
                              RRL_SLIDING_WINDOW, 10, 1000, 3, cost});
        }
    }
    return call_of(limits, "", cluster);
}

const char kZoneA[] =
    "$14\r\nsliding_window\r\n$2\r\n10\r\n$4\r\n1000\r\n$1\r\n3\r\n";

TEST(Resp, Command) {
    EXPECT_EQ(rrl::resp_command({"GET", "", "k"}),
              "*3\r\n$3\r\nGET\r\n$0\r\n\r\n$1\r\nk\r\n");
    std::string out;
    rrl::resp_bulk(out, std::size_t{1234});
    EXPECT_EQ(out, "$4\r\n1234\r\n");
}

TEST(Batch, TheCommandOfTheBatchForm) {
    auto a = plan("a", 2), b = plan("b", 1);
    rrl::Batch batch;
    int da, db;
    EXPECT_FALSE(batch.add(*a, 0, &da));
    EXPECT_FALSE(batch.add(*b, 0, &db));
    EXPECT_EQ(batch.size(), 2u);
    EXPECT_EQ(batch.keys(), 3u);
    EXPECT_EQ(batch.values(), 2u + 8 + 2 + 4);
    EXPECT_EQ(batch.share(1), 10u);
    EXPECT_EQ(batch.data(1), &db);

    // zone a goes once though b's request has it too
    const std::string want =
        "*25\r\n$7\r\nEVALSHA\r\n$3\r\nsha\r\n$1\r\n3\r\n"
        "$2\r\na0\r\n$2\r\na1\r\n$2\r\nb0\r\n"
        "$5\r\nbatch\r\n$0\r\n\r\n$1\r\n2\r\n"
        + std::string(kZoneA) +
        "$12\r\nfixed_window\r\n$1\r\n5\r\n$5\r\n60000\r\n$1\r\n0\r\n"
        "$1\r\n2\r\n$1\r\n1\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n2\r\n"
        "$1\r\n1\r\n$1\r\n1\r\n$1\r\n1\r\n";
    EXPECT_EQ(batch.command("sha"), want);
    // kept: the same bytes to send again
    EXPECT_EQ(batch.command("other"), want);
    EXPECT_THROW(batch.add(*a, 0, nullptr), std::logic_error);
    EXPECT_THROW(batch.remove(0), std::logic_error);
}

// A lease limit: its zone's algorithm ends with the suffix (the zone goes
// once, as any), its cost is "C:W:B:T", its share of the reply is wider.
TEST(Batch, ALeaseLimitCarriesItsCostFieldAndSuffix) {
    auto lease = call_of({{"k0", &zone_a, RRL_FIXED_WINDOW, 10, 1000, 0, 2, 10,
                           6, 3, 1700000000123456},
                          {"k1", &zone_b, RRL_FIXED_WINDOW, 5, 1000, 0, 1}});
    auto again = call_of(
        {{"k2", &zone_a, RRL_FIXED_WINDOW, 10, 1000, 0, 0, 10, 4}});
    rrl::Batch batch;
    EXPECT_FALSE(batch.add(*lease, 0, nullptr));
    EXPECT_FALSE(batch.add(*again, 0, nullptr));
    EXPECT_EQ(batch.values(),
              2u + (4 + RRL_REPLY_LEASE) + 4 + 2 + (4 + RRL_REPLY_LEASE));
    EXPECT_EQ(batch.share(1), 12u);  // where its share starts

    const std::string want =
        "*25\r\n$7\r\nEVALSHA\r\n$3\r\nsha\r\n$1\r\n3\r\n"
        "$2\r\nk0\r\n$2\r\nk1\r\n$2\r\nk2\r\n"
        "$5\r\nbatch\r\n$0\r\n\r\n$1\r\n2\r\n"
        "$18\r\nfixed_window+lease\r\n$2\r\n10\r\n$4\r\n1000\r\n"
        "$1\r\n0\r\n"
        "$12\r\nfixed_window\r\n$1\r\n5\r\n$4\r\n1000\r\n$1\r\n0\r\n"
        "$1\r\n2\r\n$1\r\n1\r\n$22\r\n2:6:3:1700000000123456\r\n"
        "$1\r\n2\r\n$1\r\n1\r\n"
        "$1\r\n1\r\n$1\r\n1\r\n$7\r\n0:4:0:0\r\n";
    EXPECT_EQ(batch.command("sha"), want);
}

// A settlement's entry: "s<n>", then each limit's zone and "E:A:T"; it
// mixes with checks in order, its zone named once with theirs.
TEST(Batch, ASettlementsEntryIsSN) {
    auto check = plan("a", 1);
    auto settle = call_of(
        {{"s0", &zone_a, RRL_SLIDING_WINDOW, 10, 1000, 3, 100, 0, 0, 0, 0, 30,
          1700000000000000},
         {"s1", &zone_b, RRL_TOKEN_BUCKET, 1, 1000, 0, 5, 0, 0, 0, 0, 9,
          1700000000000001}},
        rrl::kSettleForm);
    rrl::Batch batch;
    EXPECT_FALSE(batch.add(*check, 0, nullptr));
    EXPECT_FALSE(batch.add(*settle, 0, nullptr));
    EXPECT_EQ(batch.values(), 2u + 4 + 2u + 4 * 2);
    EXPECT_EQ(batch.share(1), 6u);

    const std::string want =
        "*25\r\n$7\r\nEVALSHA\r\n$3\r\nsha\r\n$1\r\n3\r\n"
        "$2\r\na0\r\n$2\r\ns0\r\n$2\r\ns1\r\n"
        "$5\r\nbatch\r\n$0\r\n\r\n$1\r\n2\r\n"
        + std::string(kZoneA) +
        "$12\r\ntoken_bucket\r\n$1\r\n1\r\n$4\r\n1000\r\n$1\r\n0\r\n"
        "$1\r\n1\r\n$1\r\n1\r\n$1\r\n1\r\n"
        "$2\r\ns2\r\n$1\r\n1\r\n$23\r\n100:30:1700000000000000\r\n"
        "$1\r\n2\r\n$20\r\n5:9:1700000000000001\r\n";
    EXPECT_EQ(batch.command("sha"), want);
}

// Requests in a row of one shape (count, zones, costs) go as a run:
// "*<r>" and the shape once, their keys in turn. A cost that differs, a
// count that differs, a settlement or a lease zone's limit starts anew;
// a lease zone's request is never in a run.
TEST(Batch, RequestsOfOneShapeInARowGoAsARun) {
    auto r1 = plan("a", 1), r2 = plan("b", 1), r3 = plan("c", 1);
    auto two = plan("d", 2), two_again = plan("e", 2);
    auto other_cost =
        call_of({{"f0", &zone_a, RRL_SLIDING_WINDOW, 10, 1000, 3, 2}});
    auto lease1 =
        call_of({{"g0", &zone_lease, RRL_FIXED_WINDOW, 5, 60000, 0, 1, 10, 4}});
    auto lease2 =
        call_of({{"h0", &zone_lease, RRL_FIXED_WINDOW, 5, 60000, 0, 1, 10, 4}});
    auto last = plan("i", 1);
    rrl::Batch batch;
    for (rrl::Call* c :
         {r1.get(), r2.get(), r3.get(), two.get(), two_again.get(),
          other_cost.get(), lease1.get(), lease2.get(), last.get()}) {
        EXPECT_FALSE(batch.add(*c, 0, nullptr));
    }
    EXPECT_EQ(batch.size(), 9u);

    const std::string want =
        "*51\r\n$7\r\nEVALSHA\r\n$3\r\nsha\r\n$2\r\n11\r\n"
        "$2\r\na0\r\n$2\r\nb0\r\n$2\r\nc0\r\n$2\r\nd0\r\n$2\r\nd1\r\n"
        "$2\r\ne0\r\n$2\r\ne1\r\n$2\r\nf0\r\n$2\r\ng0\r\n$2\r\nh0\r\n"
        "$2\r\ni0\r\n"
        "$5\r\nbatch\r\n$0\r\n\r\n$1\r\n3\r\n" +
        std::string(kZoneA) +
        "$12\r\nfixed_window\r\n$1\r\n5\r\n$5\r\n60000\r\n$1\r\n0\r\n"
        "$18\r\nfixed_window+lease\r\n$1\r\n5\r\n$5\r\n60000\r\n$1\r\n0\r\n"
        // a0 b0 c0: one run of 3
        "$2\r\n*3\r\n$1\r\n1\r\n$1\r\n1\r\n$1\r\n1\r\n"
        // d, e: a run of 2 requests of 2 limits
        "$2\r\n*2\r\n$1\r\n2\r\n$1\r\n1\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n2\r\n"
        // f0: cost 2, alone
        "$1\r\n1\r\n$1\r\n1\r\n$1\r\n2\r\n"
        // g0, h0: lease fields, each written
        "$1\r\n1\r\n$1\r\n3\r\n$7\r\n1:4:0:0\r\n"
        "$1\r\n1\r\n$1\r\n3\r\n$7\r\n1:4:0:0\r\n"
        // i0: a shape before it was a lease's: alone
        "$1\r\n1\r\n$1\r\n1\r\n$1\r\n1\r\n";
    EXPECT_EQ(batch.command("sha"), want);
}

TEST(Batch, FullAt64Requests) {
    auto a = plan("k", 1);
    rrl::Batch batch;
    for (int i = 0; i < 63; i++) EXPECT_FALSE(batch.add(*a, 0, nullptr));
    EXPECT_TRUE(batch.add(*a, 0, nullptr));
}

TEST(Batch, FullAt256Keys) {
    auto a = plan("k", 5);
    rrl::Batch batch;
    for (int i = 0; i < 51; i++) EXPECT_FALSE(batch.add(*a, 0, nullptr));
    EXPECT_TRUE(batch.add(*a, 0, nullptr));  // 260 keys
    EXPECT_EQ(batch.keys(), 260u);
}

TEST(Batch, APartLeftOut) {
    auto a = plan("a", 2), b = plan("b", 1), c = plan("c", 1);
    rrl::Batch batch, alone;
    batch.add(*a, 0, nullptr);
    batch.add(*b, 0, nullptr);
    batch.add(*c, 0, nullptr);
    batch.remove(1);
    EXPECT_EQ(batch.keys(), 3u);
    EXPECT_EQ(batch.values(), 16u);
    EXPECT_EQ(batch.share(1), 10u);
    EXPECT_THROW(batch.remove(2), std::out_of_range);
    alone.add(*a, 0, nullptr);
    alone.add(*c, 0, nullptr);
    EXPECT_EQ(batch.command("s"), alone.command("s"));
}

TEST(Batch, OfASlotsParts) {
    // parts of a cluster call, each in its own batch
    auto p = plan("{x}", 3, true);
    ASSERT_EQ(p->parts(), 1u);
    rrl::Batch batch;
    batch.add(*p, 0, nullptr);
    EXPECT_EQ(batch.keys(), 3u);
}

// what the engine must not do: a part out of range, an entry out of range,
// a part added once the command is built
TEST(Batch, RefusesWhatIsNotThere) {
    auto call = call_of({{"k", &zone_a, RRL_SLIDING_WINDOW, 10, 1000, 3, 1}});
    rrl::Call& p = *call;
    rrl::Batch b;
    int data;
    EXPECT_FALSE(b.add(p, 0, &data));
    EXPECT_THROW(b.add(p, 3, &data), std::out_of_range);  // no such part
    EXPECT_FALSE(b.add(p, 0, nullptr));
    b.remove(1);
    EXPECT_THROW(b.remove(5), std::out_of_range);
    EXPECT_EQ(b.size(), 1u);
    EXPECT_EQ(b.data(0), &data);
    EXPECT_THROW(b.data(1), std::out_of_range);
    EXPECT_EQ(b.values(), 6u);
    EXPECT_EQ(b.share(0), 0u);
    EXPECT_THROW(b.share(2), std::out_of_range);  // no such entry
    const std::string& cmd = b.command("sha");
    EXPECT_EQ(cmd.substr(0, 5), "*14\r\n");
    EXPECT_THROW(b.add(p, 0, nullptr), std::logic_error);  // built
}

}  // namespace

namespace {

int node_a, node_b;

TEST(Batch, RetriesEachOnce) {
    rrl::Batch b(&node_a, 7);
    EXPECT_EQ(b.node(), &node_a);
    EXPECT_EQ(b.slot(), 7u);
    EXPECT_EQ(b.retry(RRL_REPLY_NOSCRIPT), rrl::RetryAction::load_script);
    EXPECT_EQ(b.retry(RRL_REPLY_MOVED), rrl::RetryAction::redirect);
    EXPECT_EQ(b.retry(RRL_REPLY_NOSCRIPT), rrl::RetryAction::answer);
    EXPECT_EQ(b.retry(RRL_REPLY_ASK), rrl::RetryAction::answer);
    b.resent(&node_b);
    EXPECT_EQ(b.node(), &node_b);
}

TEST(OpenBatches, OneANodeAndSlotInOrder) {
    rrl::OpenBatches open;
    auto [a1, created] = open.get(&node_a, 1);
    EXPECT_TRUE(created);
    rrl::Batch* b1 = open.get(&node_b, 1).first;
    rrl::Batch* a2 = open.get(&node_a, 2).first;
    EXPECT_EQ(open.get(&node_a, 1), std::make_pair(a1, false));
    EXPECT_EQ(b1->node(), &node_b);
    EXPECT_EQ(a2->slot(), 2u);
    a2->sent = 1234;
    EXPECT_EQ(a2->sent, 1234);
    EXPECT_EQ(a2->retry(RRL_REPLY_ASK), rrl::RetryAction::redirect);
    EXPECT_EQ(a2->retry(RRL_REPLY_ASK), rrl::RetryAction::answer);
    EXPECT_EQ(a2->retry(RRL_REPLY_NOSCRIPT), rrl::RetryAction::load_script);

    // a full one taken out at once; the others in the order opened
    open.take(b1);
    EXPECT_THROW(open.take(b1), std::invalid_argument);  // not open
    delete b1;
    std::unique_ptr<rrl::Batch> first(open.pop());
    EXPECT_EQ(first.get(), a1);
    // a batch popped is no more open: the next of its node and slot is new
    auto [again, made] = open.get(&node_a, 1);
    EXPECT_NE(again, nullptr);
    EXPECT_TRUE(made);
    std::unique_ptr<rrl::Batch> second(open.pop());
    EXPECT_EQ(second.get(), a2);
    delete open.pop();
    EXPECT_EQ(open.pop(), nullptr);
}

}  // namespace
