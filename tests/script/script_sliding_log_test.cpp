// sliding_log at its largest: a cost up to the capacity (one sorted-set
// member per unit: added and released in chunks, never one unpack() past
// Lua's C stack), in a batch with other requests; a rejection on a full key
// finds its retry by rank in O(log N), as MONITOR shows; values that are
// no limit, period, burst or cost are refused before anything is written.
// Real script, real redis-server, injected time.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

// the bound nginx -t enforces
constexpr std::int64_t kMax = RRL_SLIDING_LOG_MAX_CAPACITY;

class SlidingLogTest : public ScriptFixture {
protected:
    // the commands Redis ran while `body` ran, as MONITOR shows them
    template <typename F>
    std::vector<std::string> monitored(F body) {
        redisContext* c = redisConnectUnix(server_->socket_path().c_str());
        EXPECT_TRUE(c != nullptr && c->err == 0);
        std::unique_ptr<redisContext, void (*)(redisContext*)> guard(c, redisFree);
        Reply ok(static_cast<redisReply*>(redisCommand(c, "MONITOR")));
        EXPECT_TRUE(ok && ok->type == REDIS_REPLY_STATUS);
        body();
        // a marker after the body: its line ends what is read
        Reply pong = redis_->command({"ECHO", "monitored-end"});
        std::vector<std::string> lines;
        for (;;) {
            void* raw = nullptr;
            if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) break;
            Reply line(static_cast<redisReply*>(raw));
            std::string s(line->str, line->len);
            if (s.find("\"monitored-end\"") != std::string::npos) break;
            lines.push_back(s);
        }
        return lines;
    }

    // one request of one limit in the batch form
    Reply batch_one(std::int64_t now, const std::vector<Limit>& requests) {
        std::vector<std::string> keys;
        std::vector<std::string> argv = {"batch", str(now),
                                         str(static_cast<std::int64_t>(requests.size()))};
        for (const Limit& l : requests) {
            argv.insert(argv.end(),
                        {l.algorithm, str(l.limit), str(l.period_ms), str(l.burst)});
        }
        for (size_t i = 0; i < requests.size(); i++) {
            keys.push_back(requests[i].key);
            argv.insert(argv.end(), {"1", str(static_cast<std::int64_t>(i + 1)),
                                     str(requests[i].cost)});
        }
        return evalsha(keys, argv);
    }
};

TEST_F(SlidingLogTest, ACostOfTheWholeCapacityInABatch) {
    // before and after it, requests of other keys: each decided
    std::vector<Limit> requests = {
        with_cost(fw("rrl:{b:1}:fw", 5, 1000), 1),
        with_cost(sl("rrl:{b:2}:sl", kMax - 100, 60000, 100), kMax),
        with_cost(sw("rrl:{b:3}:sw", 5, 1000), 2),
    };
    Reply r = batch_one(kT, requests);
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY)
        << (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "");
    ASSERT_EQ(r->elements, 3u * (RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT));
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(r->element[i * 6]->integer, 1) << "request " << i << " passed";
    }
    EXPECT_EQ(zcard("rrl:{b:2}:sl"), kMax);
    EXPECT_EQ(get("rrl:{b:1}:fw").empty(), false);

    // full: one more is rejected, nothing added
    Result full = run(kT + 1000, {with_cost(sl("rrl:{b:2}:sl", kMax - 100, 60000, 100), 1)});
    ASSERT_FALSE(full.error) << full.error_text;
    EXPECT_EQ(full.passed, 0);
    EXPECT_EQ(full.limits[0].retry_after_us, 60000 * kMs - 1000);
    EXPECT_EQ(zcard("rrl:{b:2}:sl"), kMax);
}

TEST_F(SlidingLogTest, EveryCostUpToTheCapacityInOneCall) {
    for (std::int64_t cost : {std::int64_t{3999}, std::int64_t{4000}, std::int64_t{4001},
                              std::int64_t{7999}, std::int64_t{8000}, kMax}) {
        const std::string key = "rrl:{c:" + str(cost) + "}:sl";
        Result r = run(kT, {with_cost(sl(key, kMax, 60000), cost)});
        ASSERT_FALSE(r.error) << "cost " << cost << ": " << r.error_text;
        EXPECT_EQ(r.passed, 1) << "cost " << cost;
        EXPECT_EQ(r.limits[0].remaining, kMax - cost);
        EXPECT_EQ(zcard(key), cost);
    }
}

TEST_F(SlidingLogTest, AReleaseOfTheWholeCapacity) {
    const Limit l = with_cost(sl("rrl:{r:1}:sl", kMax, 60000), kMax);
    Result r = run(kT, {l});
    ASSERT_FALSE(r.error) << r.error_text;
    ASSERT_EQ(r.passed, 1);
    ASSERT_EQ(zcard(l.key), kMax);
    EXPECT_EQ(release(kT, kT + 10, {l}), 1);
    EXPECT_EQ(zcard(l.key), 0);
}

TEST_F(SlidingLogTest, ARejectionOnAFullKeyFindsItsRetryByRank) {
    // 60,000 members (a capacity lowered since they were stored): 1,000
    // out of the window but not pruned yet, then 59,000 in it, the oldest
    // at kT, one every 10 us
    const std::string key = "rrl:{f:1}:sl";
    const std::int64_t period_ms = 60000;
    for (int chunk = 0; chunk < 60; chunk++) {
        std::vector<std::string> args = {"ZADD", key};
        for (int i = 0; i < 1000; i++) {
            const int n = chunk * 1000 + i;
            const std::int64_t at = n < 1000 ? kT - period_ms * kMs - 1000 + n
                                             : kT + 10 * (n - 1000);
            args.push_back(str(at));
            args.push_back(str(at) + ":" + str(n));
        }
        ASSERT_EQ(redis_->integer(args), 1000);
    }
    const std::int64_t now = kT + 10 * 59000;
    const Limit full = with_cost(sl(key, 5000, period_ms), 3);

    Result r;
    std::vector<std::string> lines = monitored([&] { r = run(now, {full}); });
    ASSERT_FALSE(r.error) << r.error_text;
    EXPECT_EQ(r.passed, 0);
    // 59,000 in the window, 5,000 allowed: the 54,003rd oldest must leave
    EXPECT_EQ(r.limits[0].retry_after_us, kT + 10 * 54002 + period_ms * kMs - now);
    EXPECT_EQ(zcard(key), 60000) << "a rejection writes nothing";

    int script_commands = 0;
    for (const std::string& line : lines) {
        if (line.find(" lua] ") == std::string::npos) continue;
        script_commands++;
        // a range by rank of one element, or by score with no offset
        EXPECT_EQ(line.find("\"LIMIT\""), std::string::npos) << line;
        EXPECT_EQ(line.find("ZRANGEBYSCORE"), std::string::npos) << line;
        if (line.find("\"ZRANGE\"") != std::string::npos ||
            line.find("\"ZREVRANGE\"") != std::string::npos) {
            // "ZRANGE" "key" "start" "stop" ...: start == stop
            std::vector<std::string> words;
            size_t p = line.find("\"Z");
            while (p != std::string::npos) {
                size_t q = line.find('"', p + 1);
                words.push_back(line.substr(p + 1, q - p - 1));
                p = line.find('"', q + 1);
            }
            ASSERT_GE(words.size(), 4u) << line;
            EXPECT_EQ(words[2], words[3]) << "one element: " << line;
        }
    }
    EXPECT_GT(script_commands, 0) << "MONITOR shows the script's commands";
}

TEST_F(SlidingLogTest, ARequestThatFailsInABatchFailsAlone) {
    // a key of the wrong type (written by someone else): Redis fails that
    // request's commands; the requests before it were decided and written,
    // so the batch may not fail as a whole: that one request alone gets a
    // reply no decoder accepts (passed -1), the others are decided
    ASSERT_EQ(redis_->integer({"LPUSH", "rrl:{w:2}:fw", "x"}), 1);
    std::vector<Limit> requests = {
        with_cost(fw("rrl:{w:1}:fw", 5, 1000), 1),
        with_cost(fw("rrl:{w:2}:fw", 5, 1000), 1),
        with_cost(sl("rrl:{w:3}:sl", 5, 1000), 2),
    };
    Reply r = batch_one(kT, requests);
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY)
        << (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "");
    ASSERT_EQ(r->elements, 3u * (RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT));
    EXPECT_EQ(r->element[0]->integer, 1);
    EXPECT_EQ(r->element[6]->integer, -1) << "the failed request";
    EXPECT_EQ(r->element[6 + 2]->integer, -1) << "and its limit";
    EXPECT_EQ(r->element[12]->integer, 1);
    EXPECT_FALSE(get("rrl:{w:1}:fw").empty());
    EXPECT_EQ(zcard("rrl:{w:3}:sl"), 2);

    std::vector<std::int64_t> failed;
    for (size_t i = 6; i < 12; i++) failed.push_back(r->element[i]->integer);
    rrl_limit_result_t limit;
    rrl_decision_t decision;
    EXPECT_EQ(rrl_test::reply_decode(failed.data(), failed.size(), 1, &limit,
                                     &decision),
              RRL_ERROR)
        << "the module gives that request its fail mode";
}

TEST_F(SlidingLogTest, ValuesThatAreNoLimitChangeNothing) {
    const std::vector<std::string> good = {"fixed_window", "5", "1000", "0"};
    struct Case {
        const char* what;
        std::vector<std::string> zone;
        std::string cost;
    };
    const std::vector<Case> cases = {
        {"limit inf", {"sliding_log", "inf", "1000", "0"}, "1"},
        {"limit nan", {"sliding_log", "nan", "1000", "0"}, "1"},
        {"limit 0", {"sliding_log", "0", "1000", "0"}, "1"},
        {"limit fractional", {"sliding_log", "2.5", "1000", "0"}, "1"},
        {"period 0", {"sliding_log", "5", "0", "0"}, "1"},
        {"period negative", {"sliding_log", "5", "-1000", "0"}, "1"},
        {"period inf", {"token_bucket", "5", "inf", "5"}, "1"},
        {"burst negative", {"sliding_window", "5", "1000", "-1"}, "1"},
        {"burst nan", {"leaky_bucket", "5", "1000", "nan"}, "1"},
        {"cost 0", {"fixed_window", "5", "1000", "0"}, "0"},
        {"cost negative", {"fixed_window", "5", "1000", "0"}, "-3"},
        {"cost fractional", {"sliding_log", "5", "1000", "0"}, "1.5"},
        {"cost inf", {"sliding_log", "5", "1000", "0"}, "inf"},
        {"cost huge", {"sliding_log", "5", "1000", "0"}, "1e300"},
    };
    for (const Case& c : cases) {
        // a good request first: nothing of it may be written either
        std::vector<std::string> argv = {"batch", str(kT), "2"};
        argv.insert(argv.end(), good.begin(), good.end());
        argv.insert(argv.end(), c.zone.begin(), c.zone.end());
        argv.insert(argv.end(), {"1", "1", "1", "1", "2", c.cost});
        Reply r = evalsha({"rrl:{v:1}:fw", "rrl:{v:2}:x"}, argv);
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR) << c.what;
        EXPECT_EQ(std::string(r->str, r->len), "ERR redis_ratelimit: bad arguments")
            << c.what;
        Reply keys = redis_->command({"KEYS", "*"});
        EXPECT_EQ(keys->elements, 0u) << c.what;

        // the check form too
        std::vector<std::string> check = {str(kT)};
        check.insert(check.end(), c.zone.begin(), c.zone.end());
        check.push_back(c.cost);
        r = evalsha({"rrl:{v:2}:x"}, check);
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR) << c.what;
        keys = redis_->command({"KEYS", "*"});
        EXPECT_EQ(keys->elements, 0u) << c.what;
    }
}

}  // namespace
