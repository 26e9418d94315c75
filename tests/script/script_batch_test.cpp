// The batch form of the script: the checks of several requests in one
// EVALSHA (the module sends those of one turn of its event loop together).
// Each request must be decided exactly as if it were its own call at the
// same instant, in order: the same reply integers and the same state left
// in Redis. Real script, real redis-server, injected time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "api/rrl.h"
#include "tests/script/script_fixture.hpp"

namespace {

using namespace rrl_test;

using Request = std::vector<Limit>;

class BatchTest : public ScriptFixture {
protected:
    // One EVALSHA of the batch form; the raw reply. With persist, the keys
    // are made persistent in the same script call (the TTLs come from
    // injected time, and could run out on the real clock mid-test).
    // With runs, requests in a row of one shape (count, zones, costs) go
    // as "*<r>" and the shape once.
    Reply batch_raw(const std::string& now, const std::vector<Request>& reqs,
                    bool persist = false, bool runs = false) {
        // the zones: each distinct (algorithm, limit, period, burst) once
        std::vector<std::vector<std::string>> zones;
        std::vector<std::string> keys, limits;
        std::vector<std::string> last_shape;
        std::size_t run_at = 0;  // where the last shape's "*<r>" goes
        std::int64_t run = 0;
        for (const Request& req : reqs) {
            std::vector<std::string> shape = {
                str(static_cast<std::int64_t>(req.size()))};
            for (const Limit& l : req) {
                std::vector<std::string> zone = {
                    l.algorithm, str(l.limit), str(l.period_ms), str(l.burst)};
                auto z = std::find(zones.begin(), zones.end(), zone);
                if (z == zones.end()) z = zones.insert(z, zone);
                keys.push_back(l.key);
                shape.push_back(str(z - zones.begin() + 1));
                shape.push_back(str(l.cost));
            }
            if (runs && shape == last_shape) {
                if (++run == 2) {
                    limits.insert(limits.begin() + run_at, "*2");
                } else {
                    limits[run_at] = "*" + str(run);
                }
                continue;
            }
            run_at = limits.size();
            run = 1;
            last_shape = shape;
            limits.insert(limits.end(), shape.begin(), shape.end());
        }
        std::vector<std::string> argv = {
            "batch", now, str(static_cast<std::int64_t>(zones.size()))};
        for (const auto& zone : zones) {
            argv.insert(argv.end(), zone.begin(), zone.end());
        }
        argv.insert(argv.end(), limits.begin(), limits.end());
        return persist ? evalsha_of(persisting_sha_, keys, argv)
                       : evalsha(keys, argv);
    }

    // The batch at now_us: the reply's integers, asserting its shape.
    std::vector<std::int64_t> batch(std::int64_t now_us,
                                    const std::vector<Request>& reqs,
                                    bool persist = false, bool runs = false) {
        return integers(batch_raw(str(now_us), reqs, persist, runs));
    }

    // Every key's state, as the script left it (strings and sorted sets).
    std::vector<std::string> states(const std::vector<std::string>& keys) {
        std::vector<std::string> out;
        for (const std::string& k : keys) {
            Reply t = redis_->command({"TYPE", k});
            std::string type(t->str, t->len);
            std::string s = k + " " + type + ":";
            if (type == "string") {
                Reply v = redis_->command({"GET", k});
                s.append(v->str, v->len);
            } else if (type == "zset") {
                Reply v = redis_->command(
                    {"ZRANGE", k, "0", "-1", "WITHSCORES"});
                for (size_t i = 0; i < v->elements; i++) {
                    s.append(v->element[i]->str, v->element[i]->len);
                    s += ",";
                }
            }
            out.push_back(s);
        }
        return out;
    }

    std::vector<std::string> key_names() {
        Reply r = redis_->command({"KEYS", "*"});
        std::vector<std::string> out;
        for (size_t i = 0; i < r->elements; i++) {
            out.emplace_back(r->element[i]->str, r->element[i]->len);
        }
        std::sort(out.begin(), out.end());
        return out;
    }
};

const int kAlgorithms[] = {RRL_FIXED_WINDOW, RRL_SLIDING_WINDOW,
                           RRL_SLIDING_LOG, RRL_TOKEN_BUCKET,
                           RRL_LEAKY_BUCKET};

// Random requests of one to three limits over a few keys (so that requests
// of one batch share keys), with costs of 1 to 3: run as batches under
// "b:" keys and one by one under "s:" keys at the same instants, the
// replies and the states left must be the same.
TEST_F(BatchTest, DecidesAsOneCallPerRequestInOrder) {
    std::mt19937 rng(6);
    std::int64_t now = kT;
    int rejected = 0, passed = 0;

    for (int round = 0; round < 60; round++) {
        std::vector<Request> as_batch, one_by_one;
        const int n = 1 + static_cast<int>(rng() % 12);
        for (int r = 0; r < n; r++) {
            Request b, s;
            const int nlimits = 1 + static_cast<int>(rng() % 3);
            for (int i = 0; i < nlimits; i++) {
                const int alg = kAlgorithms[rng() % 5];
                const std::string key =
                    std::string(rrl::algorithm(alg)->name.data()) + ":" +
                    std::to_string(rng() % 3);
                const std::int64_t cost = 1 + static_cast<std::int64_t>(rng() % 3);
                b.push_back(make_limit(alg, "b:" + key, 5, 1000,
                                       RRL_BURST_UNSET, cost));
                s.push_back(make_limit(alg, "s:" + key, 5, 1000,
                                       RRL_BURST_UNSET, cost));
            }
            as_batch.push_back(b);
            one_by_one.push_back(s);
        }

        std::vector<std::int64_t> got = batch(now, as_batch, true);
        std::vector<std::int64_t> want;
        for (const Request& s : one_by_one) {
            Result r = run(now, s, true);
            ASSERT_FALSE(r.error) << r.error_text;
            want.insert(want.end(), r.raw.begin(), r.raw.end());
            (r.passed == 1 ? passed : rejected)++;
        }
        ASSERT_EQ(got, want) << "round " << round;

        std::vector<std::string> bkeys, skeys;
        for (const std::string& k : key_names()) {
            (k[0] == 'b' ? bkeys : skeys).push_back(k.substr(2));
        }
        ASSERT_EQ(bkeys, skeys) << "round " << round;
        std::vector<std::string> bstates, sstates;
        for (const std::string& k : bkeys) {
            bstates.push_back(states({"b:" + k})[0].substr(1));
            sstates.push_back(states({"s:" + k})[0].substr(1));
        }
        ASSERT_EQ(bstates, sstates) << "round " << round;

        now += static_cast<std::int64_t>(rng() % 400) * kMs;
    }

    // the comparison covered both outcomes, many times
    EXPECT_GT(passed, 50);
    EXPECT_GT(rejected, 50);
}

// Requests in a row of one shape go as a run ("*<r>", the shape once):
// random batches drawn from three shapes, as runs under "r:" keys and
// request by request under "b:" keys at the same instants, give the same
// replies and leave the same states.
TEST_F(BatchTest, ARunDecidesAsItsRequestsOneByOne) {
    std::mt19937 rng(27);
    std::int64_t now = kT;
    const std::vector<std::vector<std::pair<int, std::int64_t>>> shapes = {
        {{RRL_FIXED_WINDOW, 1}},
        {{RRL_SLIDING_WINDOW, 2}},
        {{RRL_FIXED_WINDOW, 1}, {RRL_TOKEN_BUCKET, 1}}};
    int runs = 0, rejected = 0;

    for (int round = 0; round < 40; round++) {
        std::vector<Request> as_runs, as_requests;
        const int n = 1 + static_cast<int>(rng() % 20);
        std::size_t shape = rng() % 3;
        for (int r = 0; r < n; r++) {
            // mostly the shape before: runs of a few
            if (rng() % 4 == 0) shape = rng() % 3;
            Request a, b;
            for (const auto& [alg, cost] : shapes[shape]) {
                const std::string key =
                    std::string(rrl::algorithm(alg)->name.data()) + ":" +
                    std::to_string(rng() % 4);
                a.push_back(make_limit(alg, "r:" + key, 5, 1000,
                                       RRL_BURST_UNSET, cost));
                b.push_back(make_limit(alg, "b:" + key, 5, 1000,
                                       RRL_BURST_UNSET, cost));
            }
            if (r > 0 && a.size() == as_runs.back().size() &&
                a[0].algorithm == as_runs.back()[0].algorithm) {
                runs++;
            }
            as_runs.push_back(a);
            as_requests.push_back(b);
        }
        std::vector<std::int64_t> got = batch(now, as_runs, true, true);
        std::vector<std::int64_t> want = batch(now, as_requests, true);
        ASSERT_EQ(got, want) << "round " << round;
        for (std::size_t i = 0; i < want.size(); i++) {
            if (want[i] == 0 && i % 6 == 0) rejected++;
        }

        std::vector<std::string> rkeys, bkeys;
        for (const std::string& k : key_names()) {
            (k[0] == 'r' ? rkeys : bkeys).push_back(k.substr(2));
        }
        ASSERT_EQ(rkeys, bkeys) << "round " << round;
        for (const std::string& k : rkeys) {
            ASSERT_EQ(states({"r:" + k})[0].substr(1),
                      states({"b:" + k})[0].substr(1))
                << "round " << round << " key " << k;
        }
        now += static_cast<std::int64_t>(rng() % 300) * kMs;
    }
    // runs were sent, and limits were reached inside them
    EXPECT_GT(runs, 200);
    EXPECT_GT(rejected, 20);
}

TEST_F(BatchTest, OneRequestIsTheCheckReply) {
    Result single = run(kT, {fw("s", 2, 1000)});
    std::vector<std::int64_t> got = batch(kT, {{fw("b", 2, 1000)}});
    EXPECT_EQ(got, single.raw);
    EXPECT_EQ(got, (std::vector<std::int64_t>{1, kT, 1, 1, 1000 * kMs, 0}));
}

TEST_F(BatchTest, RequestsOfOneKeyConsumeInOrder) {
    std::vector<std::int64_t> got =
        batch(kT, {{fw("k", 2, 1000)}, {fw("k", 2, 1000)}, {fw("k", 2, 1000)}});
    const std::int64_t s = 1000 * kMs;
    EXPECT_EQ(got, (std::vector<std::int64_t>{1, kT, 1, 1, s, 0,  //
                                              1, kT, 1, 0, s, 0,  //
                                              0, kT, 0, 0, s, s}));
}

// A write Redis refuses (out of memory) fails the request that made it:
// -1 but for the time, which no decoder takes, so it gets the fail mode;
// the batch goes on, and a request that writes nothing keeps its reply.
TEST_F(BatchTest, AWriteRedisRefusesFailsTheRequestsThatMadeIt) {
    // a rejection writes nothing
    batch(kT, {{fw("full", 1, 1000)}});
    ASSERT_EQ(redis_->status_or_string({"CONFIG", "SET", "maxmemory", "1"}),
              "OK");
    ASSERT_EQ(redis_->status_or_string(
                  {"CONFIG", "SET", "maxmemory-policy", "noeviction"}),
              "OK");
    std::vector<std::int64_t> got =
        batch(kT, {{fw("a", 5, 1000)}, {fw("full", 1, 1000)},
                   {fw("a", 5, 1000)}});
    ASSERT_EQ(redis_->status_or_string({"CONFIG", "SET", "maxmemory", "0"}),
              "OK");
    const std::int64_t s = 1000 * kMs;
    EXPECT_EQ(got, (std::vector<std::int64_t>{-1, kT, -1, -1, -1, -1,  //
                                              0, kT, 0, 0, s, s,       //
                                              -1, kT, -1, -1, -1, -1}));
    Reply a = redis_->command({"EXISTS", "a"});
    EXPECT_EQ(a->integer, 0);
}

TEST_F(BatchTest, EmptyTimeUsesRedisTime) {
    Reply r = batch_raw("", {{fw("k", 2, 1000)}, {fw("j", 2, 1000)}});
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(r->elements, 12u);
    // both requests decided at the same instant, near the real clock
    EXPECT_EQ(r->element[1]->integer, r->element[7]->integer);
    EXPECT_GT(r->element[1]->integer, std::int64_t{1700000000} * kSecond);
}

// Malformed batches are refused whole, before anything is decided.
TEST_F(BatchTest, BadBatchesChangeNothing) {
    const std::vector<std::string> zone = {"fixed_window", "5", "1000", "0"};
    auto argv = [](std::vector<std::string> head,
                   const std::vector<std::string>& tail = {}) {
        head.insert(head.end(), tail.begin(), tail.end());
        return head;
    };
    const std::vector<std::string> one_zone = argv({"batch", "", "1"}, zone);
    struct Case {
        const char* what;
        std::vector<std::string> keys, argv;
    };
    const std::vector<Case> cases = {
        {"no zone count", {}, {"batch", ""}},
        {"no zone", {"a"}, {"batch", "", "0", "1", "1", "1"}},
        {"zone count not a number", {"a"}, argv({"batch", "", "x"}, zone)},
        {"zone count over the zones", {"a"}, argv({"batch", "", "2"}, zone)},
        {"zone arguments missing", {"a"}, {"batch", "", "1", "fixed_window"}},
        {"bad zone limit",
         {"a"},
         {"batch", "", "1", "fixed_window", "five", "1000", "0", "1", "1",
          "1"}},
        {"no request", {}, one_zone},
        {"count 0", {"a"}, argv(one_zone, {"0", "1", "1"})},
        {"count not a number", {"a"}, argv(one_zone, {"x", "1", "1"})},
        {"count not whole", {"a"}, argv(one_zone, {"1.5", "1", "1"})},
        {"zone 0", {"a"}, argv(one_zone, {"1", "0", "1"})},
        {"zone over the zones", {"a"}, argv(one_zone, {"1", "2", "1"})},
        {"bad cost", {"a"}, argv(one_zone, {"1", "1", "x"})},
        {"more keys than counted", {"a", "b"}, argv(one_zone, {"1", "1", "1"})},
        {"fewer keys than counted",
         {"a"},
         argv(one_zone, {"1", "1", "1", "1", "1", "1"})},
        {"arguments missing", {"a"}, argv(one_zone, {"1", "1"})},
        {"arguments left over", {"a"}, argv(one_zone, {"1", "1", "1", "x"})},
        {"bad time", {"a"}, argv({"batch", "soon", "1"}, argv(zone, {"1", "1", "1"}))},
        {"run of 0", {"a"}, argv(one_zone, {"*0", "1", "1", "1"})},
        {"run of 1.5", {"a"}, argv(one_zone, {"*1.5", "1", "1", "1"})},
        {"run not a number", {"a"}, argv(one_zone, {"*x", "1", "1", "1"})},
        {"run without a count", {"a"}, argv(one_zone, {"*2"})},
        {"run of settlements", {"a", "b"}, argv(one_zone, {"*2", "s1", "1", "1:1:0"})},
        {"run over the keys", {"a", "b"}, argv(one_zone, {"*3", "1", "1", "1"})},
        {"run under the keys", {"a", "b", "c"}, argv(one_zone, {"*2", "1", "1", "1"})},
        {"bad cost in the last request",
         {"a", "b"},
         argv(one_zone, {"1", "1", "1", "1", "1", "five"})},
    };
    for (const Case& c : cases) {
        Reply r = evalsha(c.keys, c.argv);
        ASSERT_EQ(r->type, REDIS_REPLY_ERROR) << c.what;
        EXPECT_EQ(std::string(r->str, r->len),
                  "ERR redis_ratelimit: bad arguments")
            << c.what;
        EXPECT_TRUE(key_names().empty()) << c.what;
    }

    Reply r = evalsha({"a", "b"},
                      {"batch", "", "2", "fixed_window", "5", "1000", "0",
                       "fixed_windows", "5", "1000", "0", "1", "1", "1", "1",
                       "2", "1"});
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(std::string(r->str, r->len),
              "ERR redis_ratelimit: unknown algorithm fixed_windows");
    EXPECT_TRUE(key_names().empty());
}

}  // namespace
