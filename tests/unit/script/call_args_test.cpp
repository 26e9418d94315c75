// rrl::call_args: the script call's arguments, in the layout the script
// and rrl_call_args_types.h's indexes expect.
#include "script/call_args.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "script/cost.hpp"
#include "script/key.hpp"
#include "tests/support/call_limit.hpp"
#include "tests/support/test_call.hpp"

namespace {

const std::string sha1(40, 'a');

rrl_call_limit_t limit(const char* zone, int algorithm, uint64_t n,
                       uint64_t period, uint64_t burst, uint64_t cost,
                       const char* key) {
    rrl_call_limit_t l =
        rrl_test::call_limit(zone, algorithm, n, period, burst);
    l.cost = cost;
    rrl_test::set_key(l, key);
    return l;
}

std::vector<std::string> build(const std::vector<rrl_call_limit_t>& limits) {
    return rrl_test::call_args_of(limits, sha1);
}

TEST(CallArgs, OneLimit) {
    auto args = build({limit("A", RRL_FIXED_WINDOW, 5, 1000, 0, 1, "k")});
    std::vector<std::string> expected = {
        "EVALSHA", sha1, "1", "rrl:{A:k}:fw", "", "fixed_window", "5",
        "1000",    "0",  "1"};
    EXPECT_EQ(args, expected);
}

TEST(CallArgs, LayoutOfSeveralLimits) {
    auto args =
        build({limit("A", RRL_SLIDING_WINDOW, 10, 60000, 3, 2, "x"),
               limit("B", RRL_TOKEN_BUCKET, 7, 1000, 20, 1000000000, "y"),
               limit("C", RRL_LEAKY_BUCKET, 1, 86400000, 0, 2000000002, "")});
    size_t n = 3;
    ASSERT_EQ(args.size(), size_t{RRL_CALL_ARGC(3)});
    EXPECT_EQ(args[2], "3");
    EXPECT_EQ(args[RRL_CALL_KEY(0)],
              rrl::build_key("A", *rrl::algorithm(RRL_SLIDING_WINDOW), "x"));
    EXPECT_EQ(args[RRL_CALL_KEY(1)],
              rrl::build_key("B", *rrl::algorithm(RRL_TOKEN_BUCKET), "y"));
    EXPECT_EQ(args[RRL_CALL_KEY(2)],
              rrl::build_key("C", *rrl::algorithm(RRL_LEAKY_BUCKET), ""));
    EXPECT_EQ(args[RRL_CALL_KEY(3)], "");  // ARGV[1]: no injected time

    EXPECT_EQ(args[RRL_CALL_ARG(n, 0, RRL_CALL_ALGORITHM)], "sliding_window");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 0, RRL_CALL_LIMIT)], "10");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 0, RRL_CALL_PERIOD)], "60000");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 0, RRL_CALL_BURST)], "3");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 0, RRL_CALL_COST)], "2");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 1, RRL_CALL_ALGORITHM)], "token_bucket");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 1, RRL_CALL_BURST)], "20");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 1, RRL_CALL_COST)], "1000000000");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 2, RRL_CALL_ALGORITHM)], "leaky_bucket");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 2, RRL_CALL_PERIOD)], "86400000");
    EXPECT_EQ(args[RRL_CALL_ARG(n, 2, RRL_CALL_COST)], "2000000002");
    EXPECT_EQ(RRL_CALL_ARG(n, 2, RRL_CALL_COST) + 1, RRL_CALL_ARGC(n));
}

TEST(CallArgs, LongKeysAndNumbersFitTheSize) {
    std::string key(1000, 'k');
    std::string zone(64, 'z');
    auto l = limit(zone.c_str(), RRL_SLIDING_LOG, UINT64_MAX, UINT64_MAX,
                   UINT64_MAX, UINT64_MAX, key.c_str());
    auto args = build({l, l});
    EXPECT_EQ(args[RRL_CALL_ARG(2, 1, RRL_CALL_LIMIT)], "18446744073709551615");
    EXPECT_EQ(args[RRL_CALL_KEY(0)].size(), args[RRL_CALL_KEY(1)].size());
}

TEST(CallArgs, NoLimits) {
    auto args = build({});
    std::vector<std::string> expected = {"EVALSHA", sha1, "0", ""};
    EXPECT_EQ(args, expected);
}

TEST(CallArgs, RefusesAnUnknownAlgorithm) {
    auto bad = limit("A", RRL_ALGORITHM_COUNT, 1, 1000, 0, 1, "k");
    rrl::CallLimits l;
    EXPECT_FALSE(rrl::to_call_limits(&bad, 1, l));
    EXPECT_TRUE(build({bad}).empty());
}

TEST(CallArgs, CppSizeBoundsTheOutput) {
    rrl::CallLimit l{"zone",  rrl::algorithm(RRL_FIXED_WINDOW), 5, 1000, 0, 1,
                     "client"};
    std::string out;
    auto args = rrl::call_args(sha1, &l, 1, out);
    EXPECT_LE(out.size(), rrl::call_args_size(&l, 1));
    EXPECT_EQ(args.size(), size_t{RRL_CALL_ARGC(1)});
    EXPECT_EQ(args.front(), "EVALSHA");
    EXPECT_EQ(args.back(), "1");
}

}  // namespace

TEST(CallArgs, ReplyDecodedWithinCapacity) {
    std::vector<rrl_call_limit_t> l = {
        limit("A", RRL_FIXED_WINDOW, 5, 1000, 2, 1, "k"),
        limit("B", RRL_TOKEN_BUCKET, 5, 1000, 8, 1, "k")};
    std::vector<int64_t> v = {1, 1000, 1, 7, 10, 0, 1, 8, 10, 0};
    rrl_limit_result_t r[2];
    rrl_decision_t d;

    EXPECT_EQ(
        rrl_test::call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
        RRL_OK);
    EXPECT_EQ(r[1].remaining, 8);

    v[7] = 9;  // more than the bucket holds: not the script's reply
    EXPECT_EQ(
        rrl_test::call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
        RRL_ERROR);
    v[7] = 8;
    v[3] = 8;
    EXPECT_EQ(rrl::over_capacity(nullptr, r, 0), 0u);
    EXPECT_EQ(
        rrl_test::call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
        RRL_ERROR);
    // a malformed reply, an unknown algorithm
    EXPECT_EQ(rrl_test::call_reply_decode(v.data(), 3, l.data(), 2, r, &d),
              RRL_ERROR);
    l[0].algorithm = 99;
    EXPECT_EQ(
        rrl_test::call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
        RRL_ERROR);
}

namespace {

rrl_call_limit_t lease_limit(const char* zone, int algorithm, uint64_t cost,
                             uint64_t want, uint64_t back = 0,
                             int64_t back_at = 0) {
    rrl_call_limit_t l = limit(zone, algorithm, 10, 1000, 0, cost, "k");
    l.lease = 10;
    l.lease_want = want;
    l.lease_back = back;
    l.lease_back_at = back_at;
    return l;
}

TEST(CallArgsLease, TheSuffixAndTheCostField) {
    std::vector<rrl_call_limit_t> l = {
        lease_limit("A", RRL_FIXED_WINDOW, 2, 7, 3, 1700000000123456),
        limit("B", RRL_TOKEN_BUCKET, 5, 1000, 5, 4, "k"),
        lease_limit("C", RRL_TOKEN_BUCKET, 1, 0)};
    auto args = build(l);
    EXPECT_EQ(args[RRL_CALL_ARG(3, 0, RRL_CALL_ALGORITHM)],
              "fixed_window" RRL_LEASE_SUFFIX);
    EXPECT_EQ(args[RRL_CALL_ARG(3, 0, RRL_CALL_ALGORITHM)],
              "fixed_window+lease");
    EXPECT_EQ(args[RRL_CALL_ARG(3, 0, RRL_CALL_LIMIT)], "10");
    EXPECT_EQ(args[RRL_CALL_ARG(3, 0, RRL_CALL_COST)],
              "2:7:3:1700000000123456");
    // a limit without lease as before
    EXPECT_EQ(args[RRL_CALL_ARG(3, 1, RRL_CALL_ALGORITHM)], "token_bucket");
    EXPECT_EQ(args[RRL_CALL_ARG(3, 1, RRL_CALL_COST)], "4");
    // W at least the cost and 1
    EXPECT_EQ(args[RRL_CALL_ARG(3, 2, RRL_CALL_ALGORITHM)],
              "token_bucket+lease");
    EXPECT_EQ(args[RRL_CALL_ARG(3, 2, RRL_CALL_COST)], "1:1:0:0");
    // the key does not change
    EXPECT_EQ(args[RRL_CALL_KEY(0)], "rrl:{A:k}:fw");
}

TEST(CallArgsLease, WantAtLeastTheCostAndOneAndNoTimeWithoutUnitsBack) {
    auto cost_of = [](rrl_call_limit_t l) {
        return build({l})[RRL_CALL_ARG(1, 0, RRL_CALL_COST)];
    };
    EXPECT_EQ(cost_of(lease_limit("A", RRL_SLIDING_WINDOW, 5, 3)), "5:5:0:0");
    EXPECT_EQ(cost_of(lease_limit("A", RRL_SLIDING_WINDOW, 0, 0)), "0:1:0:0");
    EXPECT_EQ(cost_of(lease_limit("A", RRL_SLIDING_WINDOW, 0, 9)), "0:9:0:0");
    // T only with units given back
    EXPECT_EQ(cost_of(lease_limit("A", RRL_SLIDING_WINDOW, 1, 4, 0, 77)),
              "1:4:0:0");
    EXPECT_EQ(cost_of(lease_limit("A", RRL_SLIDING_WINDOW, 1, 4, 2, 77)),
              "1:4:2:77");
    // lease 0: the cost alone, the fields ignored
    auto none = lease_limit("A", RRL_SLIDING_WINDOW, 3, 9, 2, 77);
    none.lease = 0;
    EXPECT_EQ(cost_of(none), "3");
}

TEST(CallArgsLease, TheLargestNumbersFitTheSize) {
    std::string zone(64, 'z');
    auto l = lease_limit(zone.c_str(), RRL_TOKEN_BUCKET, UINT64_MAX, UINT64_MAX,
                         UINT64_MAX, INT64_MIN);
    l.limit = l.period_ms = l.burst = UINT64_MAX;
    rrl_call_limit_t plain = l;
    plain.lease = 0;
    // 3 more numbers and their colons
    rrl::CallLimits lease, none;
    ASSERT_TRUE(rrl::to_call_limits(&l, 1, lease));
    ASSERT_TRUE(rrl::to_call_limits(&plain, 1, none));
    EXPECT_EQ(rrl::call_args_size(lease.data(), 1),
              rrl::call_args_size(none.data(), 1) + 3 * 21);
    auto args = build({l, l});
    EXPECT_EQ(args[RRL_CALL_ARG(2, 1, RRL_CALL_COST)],
              "18446744073709551615:18446744073709551615:18446744073709551615:"
              "-9223372036854775808");
}

TEST(CallArgsLease, TheReplyIsWider) {
    std::vector<rrl_call_limit_t> l = {
        lease_limit("A", RRL_FIXED_WINDOW, 1, 5),
        limit("B", RRL_FIXED_WINDOW, 5, 1000, 0, 1, "k")};
    EXPECT_EQ(
        rrl_test::reply_values(l.data(), 2),
        size_t{RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * 2 + RRL_REPLY_LEASE});
    EXPECT_EQ(RRL_REPLY_LEASE, 2);
    l[1].lease = 1;
    EXPECT_EQ(rrl_test::reply_values(l.data(), 2), size_t{2 + 6 * 2});
}

struct LeaseDecoded {
    int rc;
    rrl_limit_result_t r[2];
    rrl_decision_t d;
};

LeaseDecoded decode(const std::vector<int64_t>& v,
                    std::vector<rrl_call_limit_t>& l) {
    LeaseDecoded out{};
    out.rc = rrl_test::call_reply_decode(v.data(), v.size(), l.data(), l.size(),
                                         out.r, &out.d);
    return out;
}

// A: fixed_window 10r/s lease cost 2 want 6; B: fixed_window 5r/s
std::vector<rrl_call_limit_t> two() {
    return {lease_limit("A", RRL_FIXED_WINDOW, 2, 6),
            limit("B", RRL_FIXED_WINDOW, 5, 1000, 0, 1, "k")};
}

TEST(CallReplyDecodeLease, AGrantAndItsLifetime) {
    auto l = two();
    l[0].lease_granted = 99;  // set by the decode, whatever was there
    l[1].lease_granted = 99;
    // passed; A: remaining 4 after 6 taken, reset 1 s, granted 6 for 700 ms
    std::vector<int64_t> v = {1, 1000,   1, 4, 1000000, 0,
                              6, 700000, 1, 4, 900000,  0};
    LeaseDecoded x = decode(v, l);
    ASSERT_EQ(x.rc, RRL_OK);
    EXPECT_EQ(x.d.passed, 1);
    // Redis's 4, and the 4 of the grant beyond the cost, held here
    EXPECT_EQ(x.r[0].remaining, 8);
    EXPECT_EQ(x.r[1].remaining, 4);
    EXPECT_EQ(x.r[1].reset_after_us, 900000);
    EXPECT_EQ(l[0].lease_granted, 6u);
    EXPECT_EQ(l[0].lease_ttl_us, 700000);
    EXPECT_EQ(l[1].lease_granted, 0u);
    EXPECT_EQ(l[1].lease_ttl_us, 0);

    // the least a pass takes: the cost
    v[6] = 2;
    EXPECT_EQ(decode(v, l).rc, RRL_OK);
    EXPECT_EQ(l[0].lease_granted, 2u);
    // a renewal (cost 0) takes at least 1
    l[0].cost = 0;
    v[6] = 1;
    EXPECT_EQ(decode(v, l).rc, RRL_OK);
    EXPECT_EQ(l[0].lease_granted, 1u);
    v[6] = 0;
    EXPECT_EQ(decode(v, l).rc, RRL_ERROR);
}

TEST(CallReplyDecodeLease, APassFromALeaseHeldGrantsNothing) {
    auto l = two();
    // the lease table's own reply: passed, no grant, no lifetime
    std::vector<int64_t> v = {1, 1000, 1, 4, 1000000, 0,
                              0, 0,    1, 4, 900000,  0};
    LeaseDecoded x = decode(v, l);
    ASSERT_EQ(x.rc, RRL_OK);
    EXPECT_EQ(x.d.passed, 1);
    EXPECT_EQ(l[0].lease_granted, 0u);
    EXPECT_EQ(l[0].lease_ttl_us, 0);
    // a lifetime without a grant is no reply of either
    v[7] = 700000;
    EXPECT_EQ(decode(v, l).rc, RRL_ERROR);
}

TEST(CallReplyDecodeLease, RefusesWhatTheScriptCannotSend) {
    std::vector<int64_t> good = {1, 1000,   1, 4, 1000000, 0,
                                 6, 700000, 1, 4, 900000,  0};
    auto refused = [&](size_t at, int64_t value) {
        auto l = two();
        std::vector<int64_t> v = good;
        v[at] = value;
        return decode(v, l).rc == RRL_ERROR;
    };
    EXPECT_FALSE(refused(6, 6));
    EXPECT_TRUE(refused(6, 7));  // more than W
    EXPECT_TRUE(refused(6, 1));  // less than the cost on a pass
    EXPECT_TRUE(refused(6, -1));
    EXPECT_TRUE(refused(7, -1));  // a negative lifetime
    EXPECT_FALSE(refused(7, 0));
    EXPECT_TRUE(refused(7, static_cast<int64_t>(RRL_MAX_STATE_MS) * 1000 + 1));
    // the remaining still within the capacity
    EXPECT_TRUE(refused(3, 11));
    // a refused reply leaves no grant from an earlier one
    {
        auto l = two();
        std::vector<int64_t> v = good;
        ASSERT_EQ(decode(v, l).rc, RRL_OK);
        EXPECT_EQ(l[0].lease_granted, 6u);
        v[6] = 7;
        EXPECT_EQ(decode(v, l).rc, RRL_ERROR);
        EXPECT_EQ(l[0].lease_granted, 0u);
        EXPECT_EQ(l[0].lease_ttl_us, 0);
    }

    // W is at least the cost: a grant of the cost with want 0 passes
    auto l = two();
    l[0].lease_want = 0;
    std::vector<int64_t> v = good;
    v[6] = 2;
    EXPECT_EQ(decode(v, l).rc, RRL_OK);
    v[6] = 3;
    EXPECT_EQ(decode(v, l).rc, RRL_ERROR);
}

TEST(CallReplyDecodeLease, NothingGrantedUnlessTheRequestPassed) {
    auto l = two();
    // A rejected: no grant, no lifetime
    std::vector<int64_t> v = {0, 1000, 0, 0, 1000000, 300000,
                              0, 0,    1, 4, 900000,  0};
    LeaseDecoded x = decode(v, l);
    ASSERT_EQ(x.rc, RRL_OK);
    EXPECT_EQ(x.d.passed, 0);
    EXPECT_EQ(l[0].lease_granted, 0u);
    EXPECT_EQ(l[0].lease_ttl_us, 0);
    // a grant on a rejected limit is not the script's
    v[6] = 2;
    EXPECT_EQ(decode(v, l).rc, RRL_ERROR);
    v[6] = 0;
    v[7] = 5;
    EXPECT_EQ(decode(v, l).rc, RRL_ERROR);

    // A passed but B rejected: nothing committed, nothing granted, whatever
    // the script says A would have had
    std::vector<int64_t> w = {0, 1000,   1, 4, 1000000, 0,
                              6, 700000, 0, 0, 900000,  900000};
    l[0].lease_granted = 5;
    x = decode(w, l);
    ASSERT_EQ(x.rc, RRL_OK);
    EXPECT_EQ(l[0].lease_granted, 0u);
    EXPECT_EQ(l[0].lease_ttl_us, 0);
    w[6] = 0;
    w[7] = 0;
    EXPECT_EQ(decode(w, l).rc, RRL_OK);
    w[6] = 7;  // still never more than W
    EXPECT_EQ(decode(w, l).rc, RRL_ERROR);
}

TEST(CallReplyDecodeLease, TheNarrowRepliesLeaveNoGrant) {
    auto l = two();
    l[0].lease_granted = 3;
    l[0].lease_ttl_us = 3;
    // the deny cache's or the local zone's: 4 a limit
    std::vector<int64_t> v = {1, 1000, 1, 4, 1000000, 0, 1, 4, 900000, 0};
    ASSERT_EQ(decode(v, l).rc, RRL_OK);
    EXPECT_EQ(l[0].lease_granted, 0u);
    EXPECT_EQ(l[0].lease_ttl_us, 0);
    // a batch's failed request: -1 over the full width
    std::vector<int64_t> failed(rrl_test::reply_values(l.data(), 2), -1);
    EXPECT_EQ(decode(failed, l).rc, RRL_ERROR);
}

}  // namespace
