// A new connection's setup (rrl_handshake_*): the commands queued at once
// for each combination of username, password and database, to a Redis and
// to a Sentinel, what follows each step's success, and each command's
// arguments.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rrl.h"
#include "rrl_handshake.h"

namespace {

rrl_handshake_t redis(const std::string& username, const std::string& password,
                      uint64_t db) {
    static std::string u, p;  // outlive the struct's pointers
    u = username;
    p = password;
    rrl_handshake_t hs;
    rrl_handshake_init(&hs, 0, u.data(), u.size(), p.data(), p.size(), db);
    return hs;
}

rrl_handshake_t sentinel(const char* password) {
    rrl_handshake_t hs;
    std::string pw = password;
    rrl_handshake_init(&hs, 1, "user", 4, password, pw.size(), 5);
    return hs;
}

std::vector<int> plan(const rrl_handshake_t& hs) {
    int steps[RRL_HANDSHAKE_MAX];
    size_t n = rrl_handshake_plan(&hs, steps);
    EXPECT_LE(n, size_t{RRL_HANDSHAKE_MAX});
    return std::vector<int>(steps, steps + n);
}

std::vector<std::string> command(const rrl_handshake_t& hs, int step) {
    const char* argv[RRL_HANDSHAKE_ARGS];
    size_t argvlen[RRL_HANDSHAKE_ARGS];
    size_t n = rrl_handshake_command(&hs, step, argv, argvlen);
    std::vector<std::string> args;
    for (size_t i = 0; i < n; i++) args.emplace_back(argv[i], argvlen[i]);
    return args;
}

using Args = std::vector<std::string>;
using Steps = std::vector<int>;

TEST(Handshake, ARedisWithNothingSetIsOnlyNamed) {
    EXPECT_EQ(plan(redis("", "", 0)), Steps{RRL_HANDSHAKE_SETNAME});
}

TEST(Handshake, APasswordAuthenticatesFirst) {
    EXPECT_EQ(plan(redis("", "pw", 0)),
              (Steps{RRL_HANDSHAKE_AUTH, RRL_HANDSHAKE_SETNAME}));
}

TEST(Handshake, AUsernameAuthenticatesWithTheAcl) {
    EXPECT_EQ(plan(redis("u", "pw", 0)),
              (Steps{RRL_HANDSHAKE_AUTH_USER, RRL_HANDSHAKE_SETNAME}));
    EXPECT_EQ(plan(redis("u", "", 0)),
              (Steps{RRL_HANDSHAKE_AUTH_USER, RRL_HANDSHAKE_SETNAME}));
}

TEST(Handshake, ADatabaseIsSelectedAfterAuthAndBeforeTheName) {
    EXPECT_EQ(plan(redis("", "", 3)),
              (Steps{RRL_HANDSHAKE_SELECT, RRL_HANDSHAKE_SETNAME}));
    EXPECT_EQ(plan(redis("u", "pw", 15)),
              (Steps{RRL_HANDSHAKE_AUTH_USER, RRL_HANDSHAKE_SELECT,
                     RRL_HANDSHAKE_SETNAME}));
    EXPECT_EQ(plan(redis("", "pw", 1)),
              (Steps{RRL_HANDSHAKE_AUTH, RRL_HANDSHAKE_SELECT,
                     RRL_HANDSHAKE_SETNAME}));
}

TEST(Handshake, ASentinelOnlyAuthenticatesWithItsPassword) {
    EXPECT_EQ(plan(sentinel("")), Steps{});
    // the username and database are the Redis's, not the Sentinel's
    EXPECT_EQ(plan(sentinel("spw")), Steps{RRL_HANDSHAKE_AUTH});
    EXPECT_EQ(command(sentinel("spw"), RRL_HANDSHAKE_AUTH),
              (Args{"AUTH", "spw"}));
}

TEST(Handshake, TheScriptIsLoadedOnlyAfterTheName) {
    rrl_handshake_t hs = redis("u", "pw", 2);
    for (int step :
         {RRL_HANDSHAKE_AUTH, RRL_HANDSHAKE_AUTH_USER, RRL_HANDSHAKE_SELECT}) {
        EXPECT_EQ(rrl_handshake_next(&hs, step), RRL_HANDSHAKE_NONE);
    }
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_SETNAME),
              RRL_HANDSHAKE_SCRIPT_LOAD);
}

TEST(Handshake, ARedisWorksOnceTheScriptIsLoaded) {
    rrl_handshake_t hs = redis("", "", 0);
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_CONNECTED),
              RRL_HANDSHAKE_NONE);
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_SCRIPT_LOAD),
              RRL_HANDSHAKE_READY);
}

TEST(Handshake, ASentinelWorksOnceConnected) {
    rrl_handshake_t hs = sentinel("spw");
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_CONNECTED),
              RRL_HANDSHAKE_READY);
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_AUTH), RRL_HANDSHAKE_NONE);
}

TEST(Handshake, NothingFollowsTheEnd) {
    rrl_handshake_t hs = redis("", "", 0);
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_READY), RRL_HANDSHAKE_NONE);
    EXPECT_EQ(rrl_handshake_next(&hs, RRL_HANDSHAKE_NONE), RRL_HANDSHAKE_NONE);
}

TEST(Handshake, EachCommandsArguments) {
    rrl_handshake_t hs = redis("alice", "secret", 12);
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_AUTH), (Args{"AUTH", "secret"}));
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_AUTH_USER),
              (Args{"AUTH", "alice", "secret"}));
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_SELECT), (Args{"SELECT", "12"}));
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_SETNAME),
              (Args{"CLIENT", "SETNAME", "nginx-redis-ratelimit"}));
    size_t len = 0;
    const char* script = rrl_script(&len);
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_SCRIPT_LOAD),
              (Args{"SCRIPT", "LOAD", std::string(script, len)}));
    for (int step :
         {RRL_HANDSHAKE_NONE, RRL_HANDSHAKE_CONNECTED, RRL_HANDSHAKE_READY}) {
        EXPECT_EQ(command(hs, step), Args{});
    }
}

TEST(Handshake, APasswordMayHoldAnyByte) {
    static const char pw[] = {'a', '\0', ' ', 'b'};
    rrl_handshake_t hs;
    rrl_handshake_init(&hs, 0, nullptr, 0, pw, sizeof(pw), 0);
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_AUTH),
              (Args{"AUTH", std::string(pw, sizeof(pw))}));
}

TEST(Handshake, TheLargestDatabaseNumberFits) {
    rrl_handshake_t hs = redis("", "", UINT64_MAX);
    EXPECT_EQ(command(hs, RRL_HANDSHAKE_SELECT),
              (Args{"SELECT", "18446744073709551615"}));
}

TEST(Handshake, StepsAreNamedForLogs) {
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_AUTH)), "AUTH");
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_AUTH_USER)), "AUTH");
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_SELECT)), "SELECT");
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_SETNAME)),
              "CLIENT SETNAME");
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_SCRIPT_LOAD)),
              "SCRIPT LOAD");
    EXPECT_EQ(std::string(rrl_handshake_name(RRL_HANDSHAKE_CONNECTED)), "");
}

}  // namespace
