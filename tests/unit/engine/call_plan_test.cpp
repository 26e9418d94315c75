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

#include "base/rrl_types.h"
#include "script/algorithm.hpp"
#include "script/slot.hpp"

namespace {

int zone_a, zone_b;

// A request's limits: limit j's Redis key keys[j], sliding_window 10 per
// 1000 ms, cost j + 1; zones a, b, a, ...
struct Limits {
    std::vector<std::string> keys;
    std::vector<rrl::CallLimit> limits;
    std::vector<const void*> zones;
    std::string form;  // "": a check

    explicit Limits(const std::vector<std::string>& k) : keys(k) {
        for (std::size_t j = 0; j < keys.size(); j++) {
            rrl::CallLimit l{};
            l.zone = "z";
            l.algorithm = rrl::algorithm(RRL_SLIDING_WINDOW);
            l.limit = 10;
            l.period_ms = 1000;
            l.cost = j + 1;
            l.key = keys[j];
            l.redis_key = keys[j];
            limits.push_back(l);
            zones.push_back(j % 2 ? &zone_b : &zone_a);
        }
    }

    // nullptr: not a call (no limit)
    std::unique_ptr<rrl::Call> plan(int cluster) const {
        try {
            return std::make_unique<rrl::Call>(
                "0123abcd", form, limits.data(), zones.data(), limits.size(),
                cluster != 0);
        } catch (const std::exception&) {
            return nullptr;
        }
    }
};

using Plan = std::unique_ptr<rrl::Call>;

Plan make(const Limits& a, int cluster) {
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
    Plan p = make(Limits(kKeys), 0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->parts(), 1u);
    EXPECT_EQ(p->slot(0), 0u);
    EXPECT_EQ(p->values(0), 2u + 4 * 3);
}

TEST(Call, APartASlotInTheRequestsOrder) {
    Plan p = make(Limits(kKeys), 1);
    ASSERT_EQ(p->parts(), 2u);
    EXPECT_EQ(p->slot(0), rrl::key_slot("{a}x"));
    EXPECT_EQ(p->slot(1), rrl::key_slot("{b}x"));
    EXPECT_EQ(p->values(0), 2u + 4 * 2);
    EXPECT_EQ(p->values(1), 2u + 4);

    Limits l(kKeys);
    l.limits[2].limit = 12;
    l.limits[2].period_ms = 13;
    l.limits[2].burst = 14;
    Plan plan = make(l, 1);
    EXPECT_EQ(plan->key(0, 1), "{a}y");
    EXPECT_EQ(plan->zone(0, 1), &zone_a);
    const rrl::Call::ZoneArgs& z = plan->zone_args(0, 1);
    EXPECT_EQ(z.algorithm, "sliding_window");
    EXPECT_EQ(z.limit, 12u);
    EXPECT_EQ(z.period_ms, 13u);
    EXPECT_EQ(z.burst, 14u);
    EXPECT_EQ(plan->cost(0, 1), "3");
    EXPECT_EQ(plan->cost(1, 0), "2");
    EXPECT_THROW(plan->zone_args(0, 2), std::out_of_range);
    EXPECT_THROW(plan->key(2, 0), std::out_of_range);

    // a key not made yet is made as the script's (rrl:{ZONE:KEY}:TAG)
    l.limits[0].redis_key = {};
    l.limits[0].key = "client";
    EXPECT_EQ(make(l, 0)->key(0, 0).substr(0, 14), "rrl:{z:client}");
}

TEST(Call, RefusesNoLimitOrASha1TooLong) {
    EXPECT_EQ(Limits({}).plan(0), nullptr);
    Limits a(kKeys);
    EXPECT_THROW(rrl::Call(std::string(65, 'f'), "", a.limits.data(),
                           a.zones.data(), a.limits.size(), false),
                 std::invalid_argument);
}

TEST(Call, OnePartsReplyIsTheRequests) {
    Plan p = make(Limits({"k"}), 0);
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
    Plan p = make(Limits(kKeys), 1);
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
    Plan p = make(Limits(kKeys), 1);
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
              "$14\r\nsliding_window\r\n$2\r\n10\r\n$4\r\n1000\r\n$1\r\n0\r\n"
              "$1\r\n1\r\n"
              "$14\r\nsliding_window\r\n$2\r\n10\r\n$4\r\n1000\r\n$1\r\n0\r\n"
              "$1\r\n3\r\n");
    EXPECT_EQ(p->release_command(0).size(), 193u);
}

TEST(Call, APartFailedFailsAndReleasesTheOthers) {
    Plan p = make(Limits(kKeys), 1);
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
    Limits a(kKeys);
    a.limits[1].algorithm = rrl::algorithm(RRL_FIXED_WINDOW);  // {b}x
    a.limits[1].lease = 10;
    a.limits[1].lease_want = 5;  // its cost "2:5:0:0"
    a.limits[2].algorithm = rrl::algorithm(RRL_TOKEN_BUCKET);  // {a}y
    a.limits[2].overrides = true;
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

    EXPECT_EQ(p->cost(1, 0), "2:5:0:0");

    // a renewal: no cost, 3 wanted, 2 given back of the lease taken at T
    Limits b({"{b}x"});
    b.limits[0].lease = 10;
    b.limits[0].cost = 0;
    b.limits[0].lease_want = 3;
    b.limits[0].lease_back = 2;
    b.limits[0].lease_back_at = 1700000000000000;
    Plan q = make(b, 1);
    answer(q.get(), 0, 1, 500, 100);
    EXPECT_EQ(q->values(0), 2u + 4 + 2);
    EXPECT_EQ(q->zone_args(0, 0).algorithm, "sliding_window+lease");
    EXPECT_EQ(q->cost(0, 0), "0:3:2:1700000000000000");
}

// A settlement (ARGV[1] "settle"): 4 integers a limit whatever its zone,
// split by slot as a check (each part settles its own keys), and never
// released: it reserved nothing.
TEST(Call, ASettlementIsFourWideAndNeverReleased) {
    Limits a(kKeys);
    a.form = "settle";
    a.limits[1].algorithm = rrl::algorithm(RRL_FIXED_WINDOW);
    a.limits[1].lease = 10;
    a.limits[1].cost = 2;
    a.limits[1].settle_actual = 5;
    a.limits[1].settle_at_us = 1700000000000000;  // "2:5:1700000000000000"
    a.limits[2].algorithm = rrl::algorithm(RRL_TOKEN_BUCKET);
    a.limits[2].overrides = true;
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

    // the same limits as a check: the part that passed is released
    a.form = "";
    Plan check = make(a, 1);
    answer(check.get(), 0, 1, 500, 100);
    answer(check.get(), 1, 0, 501, 200);
    EXPECT_NE(release(check.get(), 0), "");

    Limits s({"k"});
    s.form = "settle";
    s.limits[0].algorithm = rrl::algorithm(RRL_FIXED_WINDOW);
    s.limits[0].lease = 10;
    s.limits[0].settle_actual = 2;
    s.limits[0].settle_at_us = 3;
    Plan settle = make(s, 0);
    EXPECT_TRUE(settle->settlement());
    EXPECT_EQ(settle->values(0), 6u);
    EXPECT_EQ(settle->cost(0, 0), "1:2:3");
    s.form = "settled";
    EXPECT_FALSE(make(s, 0)->settlement());
}

TEST(Call, NoSuchPart) {
    Plan p = make(Limits({"k"}), 0);
    EXPECT_THROW(p->reply(1), std::out_of_range);
    EXPECT_THROW(p->values(1), std::out_of_range);
    EXPECT_THROW(p->slot(1), std::out_of_range);
    EXPECT_THROW(p->to_release(1), std::out_of_range);
}

}  // namespace
