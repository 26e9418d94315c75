// A request's script call as parts (Call): the split by Cluster
// slot, the merge of the parts' replies in the request's limit order, and
// the release form for the parts that passed when another did not.
#include "engine/call_plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/rrl.h"
#include "api/rrl_call_args.h"
#include "script/slot.hpp"

namespace {

int zone_a, zone_b;

// [EVALSHA sha n key.. "" (algorithm limit period burst cost)..]
struct Argv {
    std::vector<std::string> args;
    std::vector<const void*> zones;

    explicit Argv(const std::vector<std::string>& keys) {
        args = {"EVALSHA", "0123abcd", std::to_string(keys.size())};
        args.insert(args.end(), keys.begin(), keys.end());
        args.push_back("");
        for (std::size_t j = 0; j < keys.size(); j++) {
            args.insert(args.end(),
                        {"2", "10", "1000", "0", std::to_string(j + 1)});
            zones.push_back(j % 2 ? &zone_b : &zone_a);
        }
    }

    // nullptr: argv not of the script's shape
    std::unique_ptr<rrl::Call> plan(int cluster) const {
        std::vector<std::string_view> argv(args.begin(), args.end());
        try {
            return std::make_unique<rrl::Call>(argv, zones, cluster != 0);
        } catch (const std::exception&) {
            return nullptr;
        }
    }
};

using Plan = std::unique_ptr<rrl::Call>;

Plan make(const Argv& a, int cluster) {
    return a.plan(cluster);
}

// a part's reply: passed, now, then (remaining reset retry cost) a limit
void answer(rrl::Call* p, size_t part, std::int64_t passed, std::int64_t now,
            std::int64_t base) {
    std::int64_t* v = p->reply(part);
    ASSERT_NE(v, nullptr);
    v[0] = passed;
    v[1] = now;
    for (size_t i = 2; i < p->values(part); i++) {
        v[i] = base + static_cast<std::int64_t>(i);
    }
}

// the part's release form, "" when it has none
std::string release(const rrl::Call* p, size_t part) {
    return p->to_release(part) ? p->release_command(part) : "";
}

// "{a}x" and "{a}y" share slot 15495, "{b}x" is in 3300
const std::vector<std::string> kKeys{"{a}x", "{b}x", "{a}y"};

TEST(Call, OnePartOutsideACluster) {
    Plan p = make(Argv(kKeys), 0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->parts(), 1u);
    EXPECT_EQ(p->slot(0), 0u);
    EXPECT_EQ(p->values(0), 2u + 4 * 3);
}

TEST(Call, APartASlotInTheRequestsOrder) {
    Plan p = make(Argv(kKeys), 1);
    ASSERT_EQ(p->parts(), 2u);
    EXPECT_EQ(p->slot(0), rrl::key_slot("{a}x"));
    EXPECT_EQ(p->slot(1), rrl::key_slot("{b}x"));
    EXPECT_EQ(p->values(0), 2u + 4 * 2);
    EXPECT_EQ(p->values(1), 2u + 4);

    rrl::Call plan({"EVALSHA", "s",  "3",  "{a}x", "{b}x", "{a}y", "t", "1",
                    "2",       "3",  "4",  "5",    "6",    "7",    "8", "9",
                    "10",      "11", "12", "13",   "14",   "15"},
                   {&zone_a, &zone_b, &zone_a}, true);
    EXPECT_EQ(plan.key(0, 1), "{a}y");
    EXPECT_EQ(plan.zone(0, 1), &zone_a);
    EXPECT_EQ(plan.zone_arg(0, 1, 0), "11");
    EXPECT_EQ(plan.zone_arg(0, 1, 3), "14");
    EXPECT_EQ(plan.cost(0, 1), "15");
    EXPECT_EQ(plan.cost(1, 0), "10");
    EXPECT_THROW(plan.zone_arg(0, 0, 4), std::out_of_range);
    EXPECT_THROW(plan.key(2, 0), std::out_of_range);
}

TEST(Call, RefusesAnotherShape) {
    Argv a(kKeys);
    a.args.pop_back();
    EXPECT_EQ(a.plan(1), nullptr);
    EXPECT_EQ(Argv({}).plan(0), nullptr);
}

TEST(Call, OnePartsReplyIsTheRequests) {
    Plan p = make(Argv({"k"}), 0);
    std::int64_t out[6] = {};
    EXPECT_EQ(p->merge(out, 6), 0u);  // no reply yet
    answer(p.get(), 0, 0, 77, 100);
    EXPECT_EQ(p->merge(out, 6), 6u);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], 77);
    EXPECT_EQ(out[5], 105);
    // rejected alone: nothing was reserved
    EXPECT_EQ(release(p.get(), 0), "");
    EXPECT_THROW(p->merge(out, 5), std::length_error);  // no room
}

TEST(Call, MergesInTheRequestsLimitOrder) {
    Plan p = make(Argv(kKeys), 1);
    answer(p.get(), 0, 1, 500, 100);  // {a}x, {a}y
    answer(p.get(), 1, 1, 501, 200);  // {b}x
    std::int64_t out[14];
    ASSERT_EQ(p->merge(out, 14), 14u);
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[1], 500);  // the first part's time
    std::vector<std::int64_t> got(out + 2, out + 14);
    std::vector<std::int64_t> want{102, 103, 104, 105, 202, 203,
                                   204, 205, 106, 107, 108, 109};
    EXPECT_EQ(got, want);
    // passed as a whole: nothing to give back
    EXPECT_EQ(release(p.get(), 0), "");
    EXPECT_EQ(release(p.get(), 1), "");
}

TEST(Call, APartRejectedRejectsAndReleasesTheOthers) {
    Plan p = make(Argv(kKeys), 1);
    answer(p.get(), 0, 1, 500, 100);
    answer(p.get(), 1, 0, 501, 200);
    std::int64_t out[14];
    ASSERT_EQ(p->merge(out, 14), 14u);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(release(p.get(), 1), "");
    EXPECT_EQ(release(p.get(), 0),
              "*18\r\n$7\r\nEVALSHA\r\n$8\r\n0123abcd\r\n$1\r\n2\r\n"
              "$4\r\n{a}x\r\n$4\r\n{a}y\r\n$7\r\nrelease\r\n$3\r\n500\r\n"
              "$0\r\n\r\n"
              "$1\r\n2\r\n$2\r\n10\r\n$4\r\n1000\r\n$1\r\n0\r\n$1\r\n1\r\n"
              "$1\r\n2\r\n$2\r\n10\r\n$4\r\n1000\r\n$1\r\n0\r\n$1\r\n3\r\n");
    EXPECT_EQ(p->release_command(0).size(), 165u);
}

TEST(Call, APartFailedFailsAndReleasesTheOthers) {
    Plan p = make(Argv(kKeys), 1);
    answer(p.get(), 1, 1, -7, 200);
    std::int64_t out[14];
    EXPECT_EQ(p->merge(out, 14), 0u);
    EXPECT_EQ(release(p.get(), 0), "");  // no reply
    EXPECT_NE(release(p.get(), 1).find("$7\r\nrelease\r\n$2\r\n-7\r\n"),
              std::string::npos);
}

// A lease limit's reply is RRL_REPLY_LEASE wider (its algorithm's suffix
// says so); the merge and the release carry it as it is.
TEST(Call, ALeaseLimitsReplyIsWider) {
    Argv a(kKeys);
    // [EVALSHA sha 3 key key key "" (5 a limit)..]: limit j at 7 + 5j
    a.args[7 + 5] = "fixed_window" RRL_LEASE_SUFFIX;  // {b}x's algorithm
    a.args[7 + 5 + 4] = "2:5:0:0";                    // its cost
    a.args[7 + 10] = "token_bucket+overrides";        // {a}y's
    Plan one = make(a, 0);
    EXPECT_EQ(one->values(0),
              2u + 4 * 3 + RRL_REPLY_LEASE + RRL_REPLY_OVERRIDE);

    Plan p = make(a, 1);
    EXPECT_EQ(p->values(0), 2u + 4 * 2 + RRL_REPLY_OVERRIDE);
    EXPECT_EQ(p->values(1), 2u + 4 + RRL_REPLY_LEASE);
    answer(p.get(), 0, 1, 500, 100);  // {a}x, {a}y
    answer(p.get(), 1, 0, 501, 200);  // {b}x rejected
    std::int64_t out[2 + 12 + 6];
    ASSERT_EQ(p->merge(out, 20), 20u);
    std::vector<std::int64_t> got(out + 2, out + 20);
    std::vector<std::int64_t> want{102, 103, 104, 105,            // {a}x
                                   202, 203, 204, 205, 206, 207,  // {b}x
                                   106, 107, 108, 109, 110, 111, 112, 113};
    EXPECT_EQ(got, want);
    // the release form carries the lease's cost field as sent: the script
    // gives back its C
    EXPECT_EQ(release(p.get(), 1), "");
    EXPECT_NE(release(p.get(), 0).find("token_bucket+overrides"),
              std::string::npos);

    Argv b({"{b}x"});
    b.args[5] = "sliding_window+lease";
    b.args[9] = "0:3:2:1700000000000000";
    Plan q = make(b, 1);
    answer(q.get(), 0, 1, 500, 100);
    EXPECT_EQ(q->values(0), 2u + 4 + 2);
    rrl::Call plan({"EVALSHA", "s", "1", "k", "", "sliding_window+lease", "10",
                    "1000", "0", "0:3:2:1700000000000000"},
                   {&zone_a}, false);
    EXPECT_EQ(plan.cost(0, 0), "0:3:2:1700000000000000");
    EXPECT_EQ(plan.values(0), 8u);
    // a name that is only the suffix is no lease
    rrl::Call bare(
        {"EVALSHA", "s", "1", "k", "", "+lease", "10", "1000", "0", "1"},
        {&zone_a}, false);
    EXPECT_EQ(bare.values(0), 6u);
}

// A settlement (ARGV[1] "settle"): 4 integers a limit whatever its zone,
// split by slot as a check (each part settles its own keys), and never
// released: it reserved nothing.
TEST(Call, ASettlementIsFourWideAndNeverReleased) {
    Argv a(kKeys);
    a.args[6] = "settle";
    a.args[7 + 5] = "fixed_window" RRL_LEASE_SUFFIX;
    a.args[7 + 5 + 4] = "2:5:1700000000000000";
    a.args[7 + 10] = "token_bucket+overrides";
    Plan one = make(a, 0);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(one->values(0), 2u + 4 * 3);

    Plan p = make(a, 1);
    ASSERT_EQ(p->parts(), 2u);
    EXPECT_EQ(p->values(0), 2u + 4 * 2);
    EXPECT_EQ(p->values(1), 2u + 4);
    answer(p.get(), 0, 1, 500, 100);
    answer(p.get(), 1, 0, 501, 200);  // a debt: its check rejected
    std::int64_t out[2 + 12];
    ASSERT_EQ(p->merge(out, 14), 14u);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[2 + 4], 202);  // {b}x, the request's second
    EXPECT_EQ(release(p.get(), 0), "");
    EXPECT_EQ(release(p.get(), 1), "");

    // the same argv as a check: the part that passed is released
    a.args[6] = "";
    Plan check = make(a, 1);
    answer(check.get(), 0, 1, 500, 100);
    answer(check.get(), 1, 0, 501, 200);
    EXPECT_NE(release(check.get(), 0), "");

    rrl::Call settle({"EVALSHA", "s", "1", "k", "settle", "fixed_window+lease",
                      "10", "1000", "0", "1:2:3"},
                     {&zone_a}, false);
    EXPECT_TRUE(settle.settlement());
    EXPECT_EQ(settle.values(0), 6u);
    EXPECT_EQ(settle.cost(0, 0), "1:2:3");
    rrl::Call not_one({"EVALSHA", "s", "1", "k", "settled", "fixed_window",
                       "10", "1000", "0", "1"},
                      {&zone_a}, false);
    EXPECT_FALSE(not_one.settlement());
}

TEST(Call, NoSuchPart) {
    Plan p = make(Argv({"k"}), 0);
    EXPECT_THROW(p->reply(1), std::out_of_range);
    EXPECT_THROW(p->values(1), std::out_of_range);
    EXPECT_THROW(p->slot(1), std::out_of_range);
    EXPECT_THROW(p->to_release(1), std::out_of_range);
}

}  // namespace
