// The lease tests' fixture: a zone with lease= (its algorithm named with
// "+lease") sends "C:W:B:T" as a limit's cost, or a renewal's ahead
// "0:W:0:0:1"; the limit's reply has 2 more integers: G and the lease's
// life (us). Calls in the check, batch and release forms, at injected
// times, on the real script and a real redis-server.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "api/rrl.h"
#include "script/algorithm.hpp"
#include "tests/script/script_fixture.hpp"

namespace rrl_test {

// as rrl_call_args.h's RRL_LEASE_SUFFIX, RRL_REPLY_LEASE and
// rrl_lease_types.h's RRL_LEASE_TOKEN_BUCKET_US (the interface of issue 16)
inline const std::string kLeaseSuffix = "+lease";
constexpr std::size_t kReplyLease = 2;
constexpr std::int64_t kTokenLeaseUs = 100000;
#ifdef RRL_REPLY_LEASE
static_assert(RRL_REPLY_LEASE == kReplyLease, "the lease reply's width");
#endif
#ifdef RRL_LEASE_TOKEN_BUCKET_US
static_assert(RRL_LEASE_TOKEN_BUCKET_US == kTokenLeaseUs, "a lease's life");
#endif

constexpr std::int64_t kSlot = kT / kTokenLeaseUs;  // token_bucket's slot at kT

// A limit of a call: a lease one (its algorithm with "+lease" and the
// cost field "C:W:B:T") or a plain one (its cost).
struct Arg {
    Limit limit;
    std::string cost;
    bool lease;
};

inline Arg lease(const Limit& l, std::int64_t c, std::int64_t w,
                 std::int64_t b = 0, std::int64_t t = 0) {
    return {l, str(c) + ":" + str(w) + ":" + str(b) + ":" + str(t), true};
}

// a lease limit whose cost field is `field`, whatever it is
inline Arg lease_field(const Limit& l, const std::string& field) {
    return {l, field, true};
}

inline Arg plain(const Limit& l, std::int64_t cost = 1) {
    return {l, str(cost), false};
}

// The integers of a limit's reply: the usual 4, then G and the life (0, 0
// for a plain limit).
struct Row {
    std::int64_t passed, remaining, reset_after_us, retry_after_us, granted,
        life_us;
};

struct Call {
    bool error = false;
    std::string error_text;
    std::int64_t passed = -1, now_us = -1;
    std::vector<Row> limits;
};

inline std::string alg_name(int algorithm) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    return a == nullptr ? "?" : std::string(a->name);
}

// 10 per 1 s with a capacity of 10 for each algorithm that leases.
inline Limit ten_per_second(int algorithm, const std::string& key) {
    const std::uint64_t burst = algorithm == RRL_TOKEN_BUCKET ? 10 : 0;
    return make_limit(algorithm, key, 10, 1000, burst, 1);
}

class LeaseTest : public ScriptFixture {
   protected:
    std::vector<std::string> args_of(const Arg& a) {
        return {a.limit.algorithm + (a.lease ? kLeaseSuffix : ""),
                str(a.limit.limit), str(a.limit.period_ms), str(a.limit.burst),
                a.cost};
    }

    // The check form at now; the keys are made persistent in the same call
    // (TTLs from injected time run on the real clock).
    Call call(std::int64_t now, const std::vector<Arg>& limits) {
        std::vector<std::string> keys, argv = {str(now)};
        for (const Arg& a : limits) {
            keys.push_back(a.limit.key);
            const auto v = args_of(a);
            argv.insert(argv.end(), v.begin(), v.end());
        }
        return decode(evalsha_of(persisting_sha_, keys, argv), limits);
    }

    // One limit's row, asserting that the call is well formed.
    Row one(std::int64_t now, const Arg& a) {
        const Call c = call(now, {a});
        EXPECT_FALSE(c.error) << c.error_text;
        EXPECT_EQ(c.limits.size(), 1u);
        if (c.limits.size() != 1) return {-1, -1, -1, -1, -1, -1};
        EXPECT_EQ(c.passed, c.limits[0].passed);
        EXPECT_EQ(c.now_us, now);
        return c.limits[0];
    }

    Call decode(const Reply& r, const std::vector<Arg>& limits) {
        Call c;
        if (r->type == REDIS_REPLY_ERROR) {
            c.error = true;
            c.error_text.assign(r->str, r->len);
            return c;
        }
        std::vector<std::int64_t> v = integers(r);
        std::size_t width = RRL_REPLY_HEADER;
        for (const Arg& a : limits) {
            width += RRL_REPLY_PER_LIMIT + (a.lease ? kReplyLease : 0);
        }
        EXPECT_EQ(v.size(), width);
        if (v.size() != width) return c;
        c.passed = v[0];
        c.now_us = v[1];
        std::size_t e = RRL_REPLY_HEADER;
        for (const Arg& a : limits) {
            Row row{v[e], v[e + 1], v[e + 2], v[e + 3], 0, 0};
            e += RRL_REPLY_PER_LIMIT;
            if (a.lease) {
                row.granted = v[e];
                row.life_us = v[e + 1];
                e += kReplyLease;
            }
            c.limits.push_back(row);
        }
        return c;
    }

    // The batch form: every distinct zone once; the raw reply.
    Reply batch_raw(std::int64_t now,
                    const std::vector<std::vector<Arg>>& reqs) {
        std::vector<std::vector<std::string>> zones;
        std::vector<std::string> keys, tail;
        for (const auto& req : reqs) {
            tail.push_back(str(static_cast<std::int64_t>(req.size())));
            for (const Arg& a : req) {
                std::vector<std::string> zone = args_of(a);
                zone.pop_back();  // the cost
                auto z = std::find(zones.begin(), zones.end(), zone);
                if (z == zones.end()) z = zones.insert(z, zone);
                keys.push_back(a.limit.key);
                tail.push_back(str(z - zones.begin() + 1));
                tail.push_back(a.cost);
            }
        }
        std::vector<std::string> argv = {
            "batch", str(now), str(static_cast<std::int64_t>(zones.size()))};
        for (const auto& zone : zones) {
            argv.insert(argv.end(), zone.begin(), zone.end());
        }
        argv.insert(argv.end(), tail.begin(), tail.end());
        return evalsha_of(persisting_sha_, keys, argv);
    }

    // The release form of a reservation made at `at`, at now.
    Reply release_of(std::int64_t at, std::int64_t now,
                     const std::vector<Arg>& limits) {
        std::vector<std::string> keys, argv = {"release", str(at), str(now)};
        for (const Arg& a : limits) {
            keys.push_back(a.limit.key);
            const auto v = args_of(a);
            argv.insert(argv.end(), v.begin(), v.end());
        }
        return evalsha(keys, argv);
    }

    // What a plain check of `cost` on a copy of l's key would reply at now
    // (l's key unchanged).
    Row probe(const Limit& l, std::int64_t now, std::int64_t cost = 1) {
        Limit p = l;
        p.key = copy_of(l.key);
        const Row r = one(now, plain(p, cost));
        redis_->command({"DEL", p.key});
        return r;
    }

    // the state of a key ("" when there is none)
    std::string state(const std::string& key) {
        Reply r = redis_->command({"GET", key});
        return r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
    }
};

}  // namespace rrl_test
