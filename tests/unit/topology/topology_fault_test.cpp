// Topology answers (topology_fault.hpp): why a
// reply to CLUSTER SLOTS or to a sentinel is of no use, as the engine logs
// it, and the replies that are answers, passed on to the parsers.
#include "topology/topology_fault.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

rrl::Value str(const char* s, int type = rrl::kValueString) {
    rrl::Value v{};
    v.type = type;
    v.str = s;
    v.len = std::strlen(s);
    return v;
}

rrl::Value integer(long long i) {
    rrl::Value v{};
    v.type = rrl::kValueInteger;
    v.integer = i;
    return v;
}

rrl::Value array(const std::vector<rrl::Value>& elements) {
    rrl::Value v{};
    v.type = rrl::kValueArray;
    v.elements = elements.data();
    v.nelements = elements.size();
    return v;
}

struct Slots {
    std::vector<rrl::SlotRange> ranges;
    size_t n = 99;
    std::string why;

    int answer(const rrl::Value* reply) {
        why.assign(16, 'x');
        auto parsed = rrl::cluster_slots_answer(reply, 4, &why);
        if (!parsed) return RRL_ERROR;
        ranges = *parsed;
        n = ranges.size();
        return RRL_OK;
    }
};

TEST(ClusterSlotsAnswer, NoReply) {
    Slots s;
    EXPECT_EQ(s.answer(nullptr), RRL_ERROR);
    EXPECT_EQ(s.why, "failed: no reply");
}

TEST(ClusterSlotsAnswer, AnErrorReplyEscaped) {
    Slots s;
    rrl::Value error = str("ERR forged\nline", rrl::kValueError);
    EXPECT_EQ(s.answer(&error), RRL_ERROR);
    EXPECT_EQ(s.why, "failed: ERR forged\\x0aline");
}

TEST(ClusterSlotsAnswer, ALongErrorIsCut) {
    Slots s;
    std::string text(1000, 'E');
    rrl::Value error = str(text.c_str(), rrl::kValueError);
    EXPECT_EQ(s.answer(&error), RRL_ERROR);
    std::string why = s.why;
    EXPECT_EQ(why.size(), 8u + 256u);
    EXPECT_EQ(why.substr(why.size() - 3), "...");
}

TEST(ClusterSlotsAnswer, NotAnArray) {
    Slots s;
    rrl::Value status = str("OK", rrl::kValueStatus);
    EXPECT_EQ(s.answer(&status), RRL_ERROR);
    EXPECT_EQ(s.why, "failed: not an array");
}

TEST(ClusterSlotsAnswer, AnArrayIsParsed) {
    Slots s;
    std::vector<rrl::Value> node = {str("127.0.0.1"), integer(7000)};
    rrl::Value primary = array(node);
    std::vector<rrl::Value> range = {integer(0), integer(16383), primary};
    std::vector<rrl::Value> ranges = {array(range)};
    rrl::Value reply = array(ranges);
    ASSERT_EQ(s.answer(&reply), RRL_OK);
    EXPECT_EQ(s.why, "");
    ASSERT_EQ(s.n, 1u);
    EXPECT_EQ(s.ranges[0].end, 16383u);
    EXPECT_EQ(s.ranges[0].primary.host, "127.0.0.1");
    EXPECT_EQ(s.ranges[0].primary.port, 7000u);
}

TEST(ClusterSlotsAnswer, MalformedIsLoggedByTheCore) {
    Slots s;
    std::vector<rrl::Value> range = {integer(0)};
    std::vector<rrl::Value> ranges = {array(range)};
    rrl::Value reply = array(ranges);
    EXPECT_EQ(s.answer(&reply), RRL_ERROR);
    EXPECT_EQ(s.why, "");
}

struct Sentinel {
    std::string host;
    unsigned port = 0;
    std::string why;

    int answer(const rrl::Value* reply) {
        why.assign(16, 'x');
        auto primary = rrl::sentinel_answer(reply, "mymaster", &why);
        if (!primary) return RRL_ERROR;
        host = primary->host;
        port = primary->port;
        return RRL_OK;
    }
};

TEST(SentinelAnswer, NoReplyOrAnError) {
    Sentinel s;
    EXPECT_EQ(s.answer(nullptr), RRL_ERROR);
    EXPECT_EQ(s.why, "failed: no reply");
    rrl::Value error = str("NOAUTH Authentication required.", rrl::kValueError);
    EXPECT_EQ(s.answer(&error), RRL_ERROR);
    EXPECT_EQ(s.why, "failed: NOAUTH Authentication required.");
}

TEST(SentinelAnswer, AnUnknownName) {
    Sentinel s;
    rrl::Value nil{};
    nil.type = rrl::kValueNil;
    EXPECT_EQ(s.answer(&nil), RRL_ERROR);
    EXPECT_EQ(s.why, "does not know \"mymaster\"");
}

TEST(SentinelAnswer, ThePrimary) {
    Sentinel s;
    std::vector<rrl::Value> addr = {str("10.0.0.2"), str("6380")};
    rrl::Value reply = array(addr);
    ASSERT_EQ(s.answer(&reply), RRL_OK);
    EXPECT_EQ(s.why, "");
    EXPECT_EQ(s.host, "10.0.0.2");
    EXPECT_EQ(s.port, 6380u);
}

TEST(SentinelAnswer, MalformedIsLoggedByTheCore) {
    Sentinel s;
    rrl::Value status = str("OK", rrl::kValueStatus);  // not an array: parsed
    EXPECT_EQ(s.answer(&status), RRL_ERROR);
    EXPECT_EQ(s.why, "");
}

}  // namespace
