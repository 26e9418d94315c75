// rrl::call_args and rrl_call_args: the script call's arguments, in the
// layout the script and rrl_call_args.h's indexes expect.
#include "call_args.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "key.hpp"
#include "rrl_call_args.h"

namespace {

const std::string sha1(40, 'a');

rrl_call_limit_t limit(const char* zone, int algorithm, uint64_t n,
                       uint64_t period, uint64_t burst, uint64_t cost,
                       const char* key) {
    return {zone,
            std::strlen(zone),
            algorithm,
            n,
            period,
            burst,
            cost,
            reinterpret_cast<const unsigned char*>(key),
            std::strlen(key),
            0,
            RRL_OVERRIDE_NONE};
}

std::vector<std::string> build(const std::vector<rrl_call_limit_t>& limits) {
    size_t n = limits.size();
    size_t size = rrl_call_args_size(limits.data(), n);
    std::string buf(size, '\0');
    std::vector<const char*> argv(RRL_CALL_ARGC(n));
    std::vector<size_t> argvlen(RRL_CALL_ARGC(n));

    EXPECT_EQ(rrl_call_args(buf.data(), size, sha1.data(), sha1.size(),
                            limits.data(), n, argv.data(), argvlen.data()),
              RRL_OK);

    std::vector<std::string> args;
    for (size_t i = 0; i < argv.size(); i++) {
        EXPECT_GE(argv[i], buf.data());
        EXPECT_LE(argv[i] + argvlen[i], buf.data() + size);
        args.emplace_back(argv[i], argvlen[i]);
    }
    return args;
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

TEST(CallArgs, RefusesAnUnknownAlgorithmOrASmallBuffer) {
    auto bad = limit("A", RRL_ALGORITHM_COUNT, 1, 1000, 0, 1, "k");
    const char* argv[RRL_CALL_ARGC(1)];
    size_t argvlen[RRL_CALL_ARGC(1)];
    char buf[256];

    EXPECT_EQ(rrl_call_args_size(&bad, 1), 0u);
    EXPECT_EQ(rrl_call_args(buf, sizeof(buf), sha1.data(), sha1.size(), &bad, 1,
                            argv, argvlen),
              RRL_ERROR);

    auto good = limit("A", RRL_FIXED_WINDOW, 1, 1000, 0, 1, "k");
    EXPECT_EQ(rrl_call_args(buf, 10, sha1.data(), sha1.size(), &good, 1, argv,
                            argvlen),
              RRL_ERROR);
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

    EXPECT_EQ(rrl_call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
              RRL_OK);
    EXPECT_EQ(r[1].remaining, 8);

    v[7] = 9;  // more than the bucket holds: not the script's reply
    EXPECT_EQ(rrl_call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
              RRL_ERROR);
    v[7] = 8;
    v[3] = 8;
    EXPECT_EQ(rrl::over_capacity(nullptr, r, 0), 0u);
    EXPECT_EQ(rrl_call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
              RRL_ERROR);
    // a malformed reply, an unknown algorithm
    EXPECT_EQ(rrl_call_reply_decode(v.data(), 3, l.data(), 2, r, &d),
              RRL_ERROR);
    l[0].algorithm = 99;
    EXPECT_EQ(rrl_call_reply_decode(v.data(), v.size(), l.data(), 2, r, &d),
              RRL_ERROR);
}
