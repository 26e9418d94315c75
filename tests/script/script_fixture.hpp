// Shared fixture of the script tests: the real Lua script (rrl::script())
// run by EVALSHA against a throwaway redis-server, with the time injected
// through ARGV[1] (microseconds).
//
// Reply: passed, now_us, then per limit
//        passed, remaining, reset_after_us, retry_after_us
// The release form (release()): ARGV "release", reserved_at_us, now_us,
// then the limits as the check's; reply: the number of limits changed.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "script/algorithm.hpp"
#include "script/script.hpp"
#include "tests/support/call_limit.hpp"
#include "tests/support/redis_server.hpp"

namespace rrl_test {

constexpr std::int64_t kMs = 1000;
constexpr std::int64_t kSecond = 1000000;
// 2023-11-14T22:13:20Z: a multiple of every period used below.
constexpr std::int64_t kT = std::int64_t{1700000000} * kSecond;

struct Limit {
    std::string key;
    std::string algorithm;
    std::int64_t limit;
    std::int64_t period_ms;
    std::int64_t burst;  // as the script takes it: effective_burst()'s
    std::int64_t cost;
};

struct LimitResult {
    std::int64_t passed, remaining, reset_after_us, retry_after_us;
};

struct Result {
    bool error = false;
    std::string error_text;
    std::vector<std::int64_t> raw;
    std::int64_t passed = -1;
    std::int64_t now_us = -1;
    std::vector<LimitResult> limits;
    int decode_rc = RRL_ERROR;
    rrl_decision_t decision{};
};

inline std::string str(std::int64_t v) {
    return std::to_string(v);
}

// A limit as the module builds it: the algorithm's name and the effective
// burst from effective_burst() (burst = RRL_BURST_UNSET: "burst=" not given).
inline Limit make_limit(int algorithm, const std::string& key,
                        std::int64_t limit, std::int64_t period_ms,
                        std::uint64_t burst = RRL_BURST_UNSET,
                        std::int64_t cost = 1) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    EXPECT_NE(a, nullptr) << algorithm;
    if (a == nullptr) return {key, "", limit, period_ms, 0, cost};
    return {key,
            std::string(a->name),
            limit,
            period_ms,
            static_cast<std::int64_t>(rrl::effective_burst(
                *a, static_cast<std::uint64_t>(limit), burst)),
            cost};
}

// capacity() of a limit built by make_limit().
inline std::int64_t capacity_of(int algorithm, const Limit& l) {
    return static_cast<std::int64_t>(rrl::capacity(
        *rrl::algorithm(algorithm), static_cast<std::uint64_t>(l.limit),
        static_cast<std::uint64_t>(l.burst)));
}

inline Limit fw(const std::string& key, std::int64_t limit,
                std::int64_t period_ms, std::int64_t burst = 0,
                std::int64_t cost = 1) {
    return {key, "fixed_window", limit, period_ms, burst, cost};
}

inline Limit sl(const std::string& key, std::int64_t limit,
                std::int64_t period_ms, std::int64_t burst = 0,
                std::int64_t cost = 1) {
    return {key, "sliding_log", limit, period_ms, burst, cost};
}

inline Limit sw(const std::string& key, std::int64_t limit,
                std::int64_t period_ms, std::uint64_t burst = RRL_BURST_UNSET,
                std::int64_t cost = 1) {
    return make_limit(RRL_SLIDING_WINDOW, key, limit, period_ms, burst, cost);
}

inline Limit tb(const std::string& key, std::int64_t limit,
                std::int64_t period_ms, std::uint64_t burst = RRL_BURST_UNSET,
                std::int64_t cost = 1) {
    return make_limit(RRL_TOKEN_BUCKET, key, limit, period_ms, burst, cost);
}

inline Limit lb(const std::string& key, std::int64_t limit,
                std::int64_t period_ms, std::uint64_t burst = RRL_BURST_UNSET,
                std::int64_t cost = 1) {
    return make_limit(RRL_LEAKY_BUCKET, key, limit, period_ms, burst, cost);
}

inline Limit with_cost(Limit l, std::int64_t cost) {
    l.cost = cost;
    return l;
}

// A deterministic pseudo-random sequence (64-bit LCG), the same on every
// platform (unlike the standard distributions).
class Sequence {
   public:
    explicit Sequence(std::uint64_t seed) : x_(seed) {}
    std::uint64_t next(std::uint64_t n) {
        x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;
        return (x_ >> 33) % n;
    }

   private:
    std::uint64_t x_;
};

class ScriptFixture : public ::testing::Test {
   protected:
    static void SetUpTestSuite() {
        server_ = new RedisServer();
        if (!server_->ok()) return;
        RedisClient client(server_->socket_path());
        std::string_view script_text = rrl::script();
        const char* script = script_text.data();
        size_t len = script_text.size();
        loaded_sha_ =
            client.status_or_string({"SCRIPT", "LOAD", {script, len}});
        // the same script, then PERSIST of its keys (and of a lease's units
        // taken ahead, "<key>:ahead"), in one script: Redis
        // expires no key while a script runs, and the TTLs the script sets
        // (from injected time) may be 1 ms of the real clock
        const std::string persisting =
            "local function rrl()\n" + std::string(script, len) +
            "\nend\nlocal reply = rrl()\n"
            "for _, k in ipairs(KEYS) do redis.call('PERSIST', k)\n"
            "  redis.call('PERSIST', k .. ':ahead') end\n"
            "return reply\n";
        persisting_sha_ =
            client.status_or_string({"SCRIPT", "LOAD", persisting});
    }

    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }

    void SetUp() override {
        ASSERT_TRUE(server_->ok()) << server_->error();
        redis_ = std::make_unique<RedisClient>(server_->socket_path());
        ASSERT_TRUE(redis_->connected());
        ASSERT_EQ(redis_->status_or_string({"FLUSHALL"}), "OK");
        ASSERT_EQ(loaded_sha_, std::string(rrl_script_sha1()));
    }

    // The integers of an array reply, asserting it is one of integers.
    static std::vector<std::int64_t> integers(const Reply& r) {
        std::vector<std::int64_t> out;
        EXPECT_EQ(r->type, REDIS_REPLY_ARRAY)
            << (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len)
                                             : "");
        if (r->type != REDIS_REPLY_ARRAY) return out;
        for (size_t i = 0; i < r->elements; i++) {
            EXPECT_EQ(r->element[i]->type, REDIS_REPLY_INTEGER);
            out.push_back(r->element[i]->integer);
        }
        return out;
    }

    // EVALSHA with raw arguments (for the bad-argument tests).
    Reply evalsha(const std::vector<std::string>& keys,
                  const std::vector<std::string>& argv) {
        return evalsha_of(rrl_script_sha1(), keys, argv);
    }

    Reply evalsha_of(const std::string& sha,
                     const std::vector<std::string>& keys,
                     const std::vector<std::string>& argv) {
        std::vector<std::string> args = {
            "EVALSHA", sha, str(static_cast<std::int64_t>(keys.size()))};
        args.insert(args.end(), keys.begin(), keys.end());
        args.insert(args.end(), argv.begin(), argv.end());
        return redis_->command(args);
    }

    // Runs the script for the given limits at time now_us ("" = Redis TIME
    // when now_us < 0), checks the raw reply shape and decodes it. With
    // persist, the keys are made persistent in the same script call: for
    // tests whose injected time runs apart from the real clock.
    Result run(std::int64_t now_us, const std::vector<Limit>& limits,
               bool persist = false) {
        std::vector<std::string> keys, argv;
        argv.push_back(now_us < 0 ? "" : str(now_us));
        for (const Limit& l : limits) {
            keys.push_back(l.key);
            argv.insert(argv.end(),
                        {l.algorithm, str(l.limit), str(l.period_ms),
                         str(l.burst), str(l.cost)});
        }
        Reply r = persist ? evalsha_of(persisting_sha_, keys, argv)
                          : evalsha(keys, argv);
        Result res;
        if (r->type == REDIS_REPLY_ERROR) {
            res.error = true;
            res.error_text.assign(r->str, r->len);
            return res;
        }
        EXPECT_EQ(r->type, REDIS_REPLY_ARRAY);
        if (r->type != REDIS_REPLY_ARRAY) return res;
        for (size_t i = 0; i < r->elements; i++) {
            EXPECT_EQ(r->element[i]->type, REDIS_REPLY_INTEGER)
                << "element " << i;
            res.raw.push_back(r->element[i]->integer);
        }
        EXPECT_EQ(res.raw.size(),
                  RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * limits.size());
        if (res.raw.size() !=
            RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * limits.size()) {
            return res;
        }
        res.passed = res.raw[0];
        res.now_us = res.raw[1];
        for (size_t i = 0; i < limits.size(); i++) {
            const std::int64_t* v =
                &res.raw[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i];
            res.limits.push_back({v[0], v[1], v[2], v[3]});
        }
        std::vector<rrl_limit_result_t> decoded(limits.size());
        res.decode_rc = rrl_test::reply_decode(res.raw.data(), res.raw.size(),
                                               limits.size(), decoded.data(),
                                               &res.decision);
        return res;
    }

    // The release form: gives back the reservation that a check of these
    // limits made at reserved_at_us, at now_us ("" = Redis TIME when
    // now_us < 0). The raw reply.
    Reply release_raw(std::int64_t reserved_at_us, std::int64_t now_us,
                      const std::vector<Limit>& limits) {
        std::vector<std::string> keys;
        std::vector<std::string> argv = {"release", str(reserved_at_us),
                                         now_us < 0 ? "" : str(now_us)};
        for (const Limit& l : limits) {
            keys.push_back(l.key);
            argv.insert(argv.end(),
                        {l.algorithm, str(l.limit), str(l.period_ms),
                         str(l.burst), str(l.cost)});
        }
        return evalsha(keys, argv);
    }

    // The same, asserting an integer reply: the number of limits changed
    // (-1 on any other reply).
    long long release(std::int64_t reserved_at_us, std::int64_t now_us,
                      const std::vector<Limit>& limits) {
        Reply r = release_raw(reserved_at_us, now_us, limits);
        EXPECT_EQ(r->type, REDIS_REPLY_INTEGER)
            << (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len)
                                             : "");
        return r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    }

    // One limit: its reply, asserting it is well formed and decodable.
    LimitResult run_one(std::int64_t now, const Limit& l) {
        Result r = run(now, {l});
        EXPECT_FALSE(r.error) << r.error_text;
        EXPECT_EQ(r.limits.size(), 1u);
        if (r.limits.size() != 1) return {-1, -1, -1, -1};
        EXPECT_EQ(r.passed, r.limits[0].passed);
        EXPECT_EQ(r.now_us, now);
        EXPECT_EQ(r.decode_rc, RRL_OK) << "at t=" << now - kT;
        return r.limits[0];
    }

    // One limit, asserting the exact per-limit integers and that the C
    // decoder accepts the reply.
    void expect_one(std::int64_t now, const Limit& l, std::int64_t passed,
                    std::int64_t remaining, std::int64_t reset_after_us,
                    std::int64_t retry_after_us) {
        Result r = run(now, {l});
        ASSERT_FALSE(r.error) << r.error_text;
        ASSERT_EQ(r.limits.size(), 1u);
        EXPECT_EQ(r.passed, passed) << "at t=" << now - kT;
        EXPECT_EQ(r.now_us, now);
        EXPECT_EQ(r.limits[0].passed, passed) << "at t=" << now - kT;
        EXPECT_EQ(r.limits[0].remaining, remaining) << "at t=" << now - kT;
        EXPECT_EQ(r.limits[0].reset_after_us, reset_after_us)
            << "at t=" << now - kT;
        EXPECT_EQ(r.limits[0].retry_after_us, retry_after_us)
            << "at t=" << now - kT;
        EXPECT_EQ(r.decode_rc, RRL_OK) << "at t=" << now - kT;
    }

    std::string get(const std::string& key) {
        return redis_->status_or_string({"GET", key});
    }

    void set(const std::string& key, const std::string& value) {
        ASSERT_EQ(redis_->status_or_string({"SET", key, value}), "OK");
    }

    long long zcard(const std::string& key) {
        return redis_->integer({"ZCARD", key});
    }

    // Members and scores, in order.
    std::vector<std::string> zrange(const std::string& key) {
        Reply r = redis_->command({"ZRANGE", key, "0", "-1", "WITHSCORES"});
        std::vector<std::string> out;
        EXPECT_EQ(r->type, REDIS_REPLY_ARRAY);
        if (r->type != REDIS_REPLY_ARRAY) return out;
        for (size_t i = 0; i < r->elements; i++) {
            out.emplace_back(r->element[i]->str, r->element[i]->len);
        }
        return out;
    }

    // DUMP of a key ("(nil)" if absent): value and type, without the TTL.
    std::string dump(const std::string& key) {
        Reply r = redis_->command({"DUMP", key});
        if (r->type == REDIS_REPLY_NIL) return "(nil)";
        EXPECT_EQ(r->type, REDIS_REPLY_STRING);
        return r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
    }

    // A copy of key ("rrl:{probe}:copy", none when key has none), for a
    // probe that leaves key unchanged; the probe DELs it after.
    std::string copy_of(const std::string& key) {
        const std::string copy = "rrl:{probe}:copy";
        redis_->command({"DEL", copy});
        const std::string d = dump(key);
        if (d != "(nil)") {
            EXPECT_EQ(redis_->status_or_string({"RESTORE", copy, "0", d}),
                      "OK");
        }
        return copy;
    }

    long long pttl(const std::string& key) {
        return redis_->integer({"PTTL", key});
    }

    static inline RedisServer* server_ = nullptr;
    static inline std::string loaded_sha_;
    static inline std::string persisting_sha_;
    std::unique_ptr<RedisClient> redis_;
};

}  // namespace rrl_test
