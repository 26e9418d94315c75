// A new connection's setup (handshake.hpp): the commands queued at once
// for each combination of username, password and database, to a Redis and
// to a Sentinel, what follows each step's success, and each command's
// arguments.
#include "engine/handshake.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/rrl.h"
#include "script/script.hpp"

namespace {

rrl::Handshake redis(const std::string& username, const std::string& password,
                     uint64_t db) {
    static std::string u, p;  // outlive the views
    u = username;
    p = password;
    rrl::Handshake hs;
    rrl::handshake_init(&hs, false, u, p, db);
    return hs;
}

rrl::Handshake sentinel(const char* password) {
    rrl::Handshake hs;
    rrl::handshake_init(&hs, true, "user", password, 5);
    return hs;
}

std::vector<int> plan(const rrl::Handshake& hs) {
    int steps[rrl::kHandshakeMax];
    size_t n = rrl::handshake_plan(hs, steps);
    EXPECT_LE(n, size_t{rrl::kHandshakeMax});
    return std::vector<int>(steps, steps + n);
}

std::vector<std::string> command(const rrl::Handshake& hs, int step) {
    std::string_view argv[rrl::kHandshakeArgs];
    size_t n = rrl::handshake_command(hs, step, argv);
    std::vector<std::string> args;
    for (size_t i = 0; i < n; i++) args.emplace_back(argv[i]);
    return args;
}

using Args = std::vector<std::string>;
using Steps = std::vector<int>;

TEST(Handshake, ARedisWithNothingSetIsOnlyNamed) {
    EXPECT_EQ(plan(redis("", "", 0)), Steps{rrl::kHandshakeSetname});
}

TEST(Handshake, APasswordAuthenticatesFirst) {
    EXPECT_EQ(plan(redis("", "pw", 0)),
              (Steps{rrl::kHandshakeAuth, rrl::kHandshakeSetname}));
}

TEST(Handshake, AUsernameAuthenticatesWithTheAcl) {
    EXPECT_EQ(plan(redis("u", "pw", 0)),
              (Steps{rrl::kHandshakeAuthUser, rrl::kHandshakeSetname}));
    EXPECT_EQ(plan(redis("u", "", 0)),
              (Steps{rrl::kHandshakeAuthUser, rrl::kHandshakeSetname}));
}

TEST(Handshake, ADatabaseIsSelectedAfterAuthAndBeforeTheName) {
    EXPECT_EQ(plan(redis("", "", 3)),
              (Steps{rrl::kHandshakeSelect, rrl::kHandshakeSetname}));
    EXPECT_EQ(plan(redis("u", "pw", 15)),
              (Steps{rrl::kHandshakeAuthUser, rrl::kHandshakeSelect,
                     rrl::kHandshakeSetname}));
    EXPECT_EQ(plan(redis("", "pw", 1)),
              (Steps{rrl::kHandshakeAuth, rrl::kHandshakeSelect,
                     rrl::kHandshakeSetname}));
}

TEST(Handshake, ASentinelOnlyAuthenticatesWithItsPassword) {
    EXPECT_EQ(plan(sentinel("")), Steps{});
    // the username and database are the Redis's, not the Sentinel's
    EXPECT_EQ(plan(sentinel("spw")), Steps{rrl::kHandshakeAuth});
    EXPECT_EQ(command(sentinel("spw"), rrl::kHandshakeAuth),
              (Args{"AUTH", "spw"}));
}

TEST(Handshake, TheScriptIsLoadedOnlyAfterTheName) {
    rrl::Handshake hs = redis("u", "pw", 2);
    for (int step : {rrl::kHandshakeAuth, rrl::kHandshakeAuthUser,
                     rrl::kHandshakeSelect}) {
        EXPECT_EQ(rrl::handshake_next(hs, step), rrl::kHandshakeNone);
    }
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeSetname),
              rrl::kHandshakeScriptLoad);
}

TEST(Handshake, ARedisWorksOnceTheScriptIsLoaded) {
    rrl::Handshake hs = redis("", "", 0);
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeConnected),
              rrl::kHandshakeNone);
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeScriptLoad),
              rrl::kHandshakeReady);
}

TEST(Handshake, ASentinelWorksOnceConnected) {
    rrl::Handshake hs = sentinel("spw");
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeConnected),
              rrl::kHandshakeReady);
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeAuth),
              rrl::kHandshakeNone);
}

TEST(Handshake, NothingFollowsTheEnd) {
    rrl::Handshake hs = redis("", "", 0);
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeReady),
              rrl::kHandshakeNone);
    EXPECT_EQ(rrl::handshake_next(hs, rrl::kHandshakeNone),
              rrl::kHandshakeNone);
}

TEST(Handshake, EachCommandsArguments) {
    rrl::Handshake hs = redis("alice", "secret", 12);
    EXPECT_EQ(command(hs, rrl::kHandshakeAuth), (Args{"AUTH", "secret"}));
    EXPECT_EQ(command(hs, rrl::kHandshakeAuthUser),
              (Args{"AUTH", "alice", "secret"}));
    EXPECT_EQ(command(hs, rrl::kHandshakeSelect), (Args{"SELECT", "12"}));
    EXPECT_EQ(command(hs, rrl::kHandshakeSetname),
              (Args{"CLIENT", "SETNAME", "nginx-redis-ratelimit"}));
    std::string_view script_text = rrl::script();
    const char* script = script_text.data();
    size_t len = script_text.size();
    EXPECT_EQ(command(hs, rrl::kHandshakeScriptLoad),
              (Args{"SCRIPT", "LOAD", std::string(script, len)}));
    for (int step : {rrl::kHandshakeNone, rrl::kHandshakeConnected,
                     rrl::kHandshakeReady}) {
        EXPECT_EQ(command(hs, step), Args{});
    }
}

TEST(Handshake, APasswordMayHoldAnyByte) {
    static const char pw[] = {'a', '\0', ' ', 'b'};
    rrl::Handshake hs;
    rrl::handshake_init(&hs, false, {}, std::string_view(pw, sizeof(pw)), 0);
    EXPECT_EQ(command(hs, rrl::kHandshakeAuth),
              (Args{"AUTH", std::string(pw, sizeof(pw))}));
}

TEST(Handshake, TheLargestDatabaseNumberFits) {
    rrl::Handshake hs = redis("", "", UINT64_MAX);
    EXPECT_EQ(command(hs, rrl::kHandshakeSelect),
              (Args{"SELECT", "18446744073709551615"}));
}

TEST(Handshake, StepsAreNamedForLogs) {
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeAuth)), "AUTH");
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeAuthUser)),
              "AUTH");
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeSelect)),
              "SELECT");
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeSetname)),
              "CLIENT SETNAME");
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeScriptLoad)),
              "SCRIPT LOAD");
    EXPECT_EQ(std::string(rrl::handshake_name(rrl::kHandshakeConnected)), "");
}

}  // namespace
