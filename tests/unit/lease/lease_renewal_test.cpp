// LeaseRenewal on the engine: one call of its own in the turn's batches, a
// limit at no cost asking for a lease; learned() once on every path, with
// the key and limit copied, the grant decoded, and how the call ended.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "api/wrap/capi.hpp"
#include "lease/lease_call.hpp"
#include "tests/engine/engine_fixture.hpp"
#include "tests/support/call_limit.hpp"

namespace {

using rrl_test::Argv;
using rrl_test::EngineTest;
using rrl_test::FakeConn;
using rrl_test::TestCall;

// What learned() was given, copied: it runs once.
struct Learned {
    int calls = 0;
    bool result = false;
    rrl_limit_result_t limit_result{};
    std::string key;  // the Redis key
    std::string client_key;
    std::uint64_t cost = 99, want = 0, granted = 0;
    std::int64_t ttl = 0;
    int how = -1;
    std::int64_t redis_now = 0, sent = 0;

    static void fn(void* arg, const char* key, size_t key_len,
                   const rrl_call_limit_t* limit,
                   const rrl_limit_result_t* result, int how,
                   std::int64_t redis_now_us, std::int64_t sent_us) {
        auto* l = static_cast<Learned*>(arg);
        l->calls++;
        l->result = result != nullptr;
        if (result != nullptr) l->limit_result = *result;
        l->key.assign(key, key_len);
        l->client_key.assign(reinterpret_cast<const char*>(limit->key),
                             limit->key_len);
        l->cost = limit->cost;
        l->want = limit->lease_want;
        l->granted = limit->lease_granted;
        l->ttl = limit->lease_ttl_us;
        l->how = how;
        l->redis_now = redis_now_us;
        l->sent = sent_us;
    }
};

// a lease reply to one request of one limit: passed, remaining, and the
// grant with its lifetime
std::string lease_reply(bool passed, long long granted, long long ttl_us) {
    using rrl_test::integer;
    return rrl_test::array({integer(passed ? 1 : 0), integer(rrl_test::kNow),
                            integer(passed ? 1 : 0), integer(passed ? 90 : 0),
                            integer(1000000), integer(passed ? 0 : 500000),
                            integer(granted), integer(ttl_us)});
}

class LeaseRenewalEngine : public EngineTest {
   protected:
    // renews the lease of key (sliding_window 100r/s, lease=10%) for want
    // units; the caller's key is overwritten after: the renewal keeps its own
    bool renew(const char* key, std::uint64_t want, Learned& l) {
        std::string k = key;
        rrl_call_limit_t limit =
            rrl_test::call_limit("z", RRL_SLIDING_WINDOW, 100, 1000, 0);
        limit.lease = 10;
        limit.cost = 3;        // a request's: the renewal's is 0
        limit.lease_back = 4;  // a request's: a renewal gives none back
        rrl_test::set_key(limit, k.c_str());
        char redis_key[] = "stale";  // the request's: made anew
        limit.redis_key = redis_key;
        limit.redis_key_len = sizeof(redis_key) - 1;
        bool made = rrl::LeaseRenewal::start(rrl::capi::engine_of(engine.get()),
                                             rrl_script_sha1(), limit, want,
                                             &zone_, 42, Learned::fn, &l);
        k.assign(k.size(), '#');
        return made;
    }

    int zone_ = 0;
};

TEST_F(LeaseRenewalEngine, LearnsTheGrantOnce) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return rrl_test::is_batch(a) ? lease_reply(true, 5, 400000)
                                     : rrl_test::redis_reply(a);
    };
    Learned l;
    ASSERT_TRUE(renew("k", 5, l));
    EXPECT_EQ(l.calls, 0);  // later, from the loop
    ASSERT_TRUE(loop.run_until([&] { return l.calls > 0; }));
    loop.run(5);
    EXPECT_EQ(l.calls, 1);
    EXPECT_EQ(l.how, RRL_LEASE_CALL_PASSED);
    ASSERT_TRUE(l.result);
    EXPECT_EQ(l.limit_result.passed, 1);
    // the grant's 5 units count as this server's (call_reply_decode())
    EXPECT_EQ(l.limit_result.remaining, 95);
    EXPECT_EQ(l.key, "rrl:{z:k}:sw");
    EXPECT_EQ(l.client_key, "k");
    EXPECT_EQ(l.cost, 0u);
    EXPECT_EQ(l.want, 5u);
    EXPECT_EQ(l.granted, 5u);
    EXPECT_EQ(l.ttl, 400000);
    EXPECT_EQ(l.redis_now, rrl_test::kNow);
    EXPECT_EQ(l.sent, 42);

    // one request, its key, at no cost for 5 units, nothing given back
    Argv batch = last_batch();
    EXPECT_EQ(rrl_test::batch_requests(batch),
              (std::vector<Argv>{{"rrl:{z:k}:sw"}}));
    EXPECT_NE(std::find(batch.begin(), batch.end(), "0:5:0:0"), batch.end());
}

TEST_F(LeaseRenewalEngine, ARefusalIsRejected) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return rrl_test::is_batch(a) ? lease_reply(false, 0, 0)
                                     : rrl_test::redis_reply(a);
    };
    Learned l;
    ASSERT_TRUE(renew("k", 5, l));
    ASSERT_TRUE(loop.run_until([&] { return l.calls > 0; }));
    EXPECT_EQ(l.how, RRL_LEASE_CALL_REJECTED);
    ASSERT_TRUE(l.result);
    EXPECT_EQ(l.limit_result.passed, 0);
    EXPECT_EQ(l.granted, 0u);
}

// an error reply, or one not the script's (a grant over what was asked):
// failed, once
TEST_F(LeaseRenewalEngine, AFailureOrABadReplyIsFailed) {
    start();
    redis.handler = [](FakeConn&, const Argv& a) {
        return rrl_test::is_batch(a) ? std::string("-ERR boom\r\n")
                                     : rrl_test::redis_reply(a);
    };
    Learned failed;
    ASSERT_TRUE(renew("k", 5, failed));
    ASSERT_TRUE(loop.run_until([&] { return failed.calls > 0; }));
    loop.run(5);
    EXPECT_EQ(failed.calls, 1);
    EXPECT_EQ(failed.how, RRL_LEASE_CALL_FAILED);
    EXPECT_EQ(failed.key, "rrl:{z:k}:sw");

    redis.handler = [](FakeConn&, const Argv& a) {
        return rrl_test::is_batch(a) ? lease_reply(true, 6, 400000)
                                     : rrl_test::redis_reply(a);
    };
    Learned bad;
    ASSERT_TRUE(renew("k", 5, bad));
    ASSERT_TRUE(loop.run_until([&] { return bad.calls > 0; }));
    EXPECT_EQ(bad.how, RRL_LEASE_CALL_FAILED);
    EXPECT_EQ(bad.granted, 0u);
}

TEST_F(LeaseRenewalEngine, TimedOutOnce) {
    start();
    redis.handler = rrl_test::blackhole_batches;
    Learned l;
    ASSERT_TRUE(renew("k", 5, l));
    ASSERT_TRUE(loop.run_until([&] { return redis.batches() == 1; }));
    loop.advance(200);
    EXPECT_EQ(l.calls, 1);
    EXPECT_EQ(l.how, RRL_LEASE_CALL_FAILED);
    redis.last_open()->send(lease_reply(true, 5, 400000));
    loop.run(10);
    EXPECT_EQ(l.calls, 1);
}

// not made (too many parked): at once, unsent, so that the entry has no
// renewal in flight any more
TEST_F(LeaseRenewalEngine, NotMadeIsUnsentAtOnce) {
    conf.conf.max_parked = 1;
    start();
    redis.handler = rrl_test::blackhole_batches;
    TestCall a({"a"});
    ASSERT_TRUE(a.start(engine.get()));
    Learned l;
    EXPECT_FALSE(renew("k", 5, l));
    EXPECT_EQ(l.calls, 1);
    EXPECT_EQ(l.how, RRL_LEASE_CALL_UNSENT);
    EXPECT_FALSE(l.result);
    EXPECT_EQ(l.key, "rrl:{z:k}:sw");
    EXPECT_EQ(l.client_key, "k");
    EXPECT_EQ(l.sent, 42);
    loop.advance(200);
    EXPECT_EQ(l.calls, 1);
}

}  // namespace
