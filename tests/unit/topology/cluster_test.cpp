// Redis Cluster and Sentinel in the core: key slots (key_slot()), error
// kinds and MOVED/ASK targets (error_kind(), parse_redirect()), and the
// replies to CLUSTER SLOTS and SENTINEL get-master-addr-by-name
// (parse_cluster_slots(), parse_sentinel_primary()).
//
// Expected slots and reply shapes were taken from a real redis-server 7.0
// started by hand with --cluster-enabled yes (CLUSTER KEYSLOT, CLUSTER
// SLOTS with and without cluster-announce-hostname and each
// cluster-preferred-endpoint-type) and a real sentinel: the test fixture
// starts servers without cluster mode.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/redis_errors.hpp"
#include "script/key.hpp"
#include "script/script_reply.hpp"
#include "api/rrl.h"
#include "script/slot.hpp"
#include "topology/topology_replies.hpp"
#include "topology/topology_fault.hpp"

namespace {

using namespace std::string_literals;

// ---- key slots ----

unsigned slot(const std::string& key) {
    return rrl::key_slot(key);
}

TEST(KeySlot, Crc16IsXmodem) {
    EXPECT_EQ(rrl::crc16("123456789"), 0x31C3);  // Redis' crc16.c test
    EXPECT_EQ(rrl::crc16(""), 0);
    EXPECT_EQ(rrl::crc16("A"), 0x58E5);
}

struct KnownSlot {
    std::string key;
    unsigned slot;
};

// CLUSTER KEYSLOT of a redis-server 7.0.15
TEST(KeySlot, AsRedisComputesThem) {
    const KnownSlot known[] = {
        {"123456789", 12739},  // 0x31C3 mod 16384
        {"foo", 12182},
        {"bar", 5061},
        {"zap", 6469},
        {"{user1000}.following", 3443},
        {"{user1000}.followers", 3443},
        {"foo{}{bar}", 8363},     // empty first tag: the whole key
        {"foo{{bar}}zap", 4015},  // the tag is "{bar"
        {"{bar", 4015},
        {"foo{bar}{zap}", 5061},  // the first tag only: "bar"
        {"{a}", 15495},
        {"a", 15495},
        {"}{a}", 15495},  // a '}' before the '{' does not count
        {"{a", 10276},    // no '}': the whole key
        {"a}", 5921},
        {"{}a", 10875},
        {"{{}}", 4092},  // the tag is "{"
        {"{{}", 4092},
        {"{}}", 14790},
        {"x{y}}", 12222},
        {"rrl:{api:10.0.0.1}:sw", 3177},
        {"api:10.0.0.1", 3177},
        {"", 0},
        {"{}", 15257},
        {"\0"s, 0},
        {"a\0b"s, 8383},
        {"{\0}x"s, 0},  // the tag is one NUL byte
        {"\xff\xfe{\x80}", 4488},
    };
    for (const KnownSlot& k : known) {
        EXPECT_EQ(slot(k.key), k.slot) << rrl::printable(k.key, 64);
        EXPECT_EQ(rrl::key_slot(k.key), k.slot);
    }
}

// Random binary keys, a quarter of their bytes braces (so that most have a
// tag, empty or not). std::mt19937's output is fixed by the standard.
std::string random_key(std::mt19937& rng) {
    std::size_t len = rng() % 24;
    std::string key;
    for (std::size_t i = 0; i < len; i++) {
        std::uint32_t r = rng();
        key.push_back(r % 4 == 0 ? "{}"[(r >> 2) % 2]
                                 : static_cast<char>(r >> 8));
    }
    return key;
}

TEST(KeySlot, RandomKeysAsRedisComputesThem) {
    // the first slots, and an FNV-1a hash of all 4096 (as 16-bit little
    // endian), from CLUSTER KEYSLOT of a redis-server 7.0.15
    const unsigned first[] = {8559, 6808, 13197, 480, 9490, 4159, 12428, 15353};
    std::mt19937 rng(20240611);
    std::uint32_t hash = 2166136261u;
    for (unsigned i = 0; i < 4096; i++) {
        std::string key = random_key(rng);
        unsigned s = slot(key);
        ASSERT_LT(s, unsigned{RRL_CLUSTER_SLOTS});
        if (i < std::size(first)) {
            EXPECT_EQ(s, first[i]) << "key " << i;
        }
        for (unsigned byte = 0; byte < 2; byte++) {
            hash = (hash ^ ((s >> (8 * byte)) & 0xff)) * 16777619u;
        }
    }
    EXPECT_EQ(hash, 0x14a88a7au);
}

TEST(KeySlot, EveryKeyOfAZoneAndClientInOneSlot) {
    const std::string zone = "api";
    const std::string client = "10.0.0.1";
    char buf[256];
    for (int a = 0; a < RRL_ALGORITHM_COUNT; a++) {
        size_t len =
            rrl_key_build(buf, zone.data(), zone.size(), a,
                          reinterpret_cast<const unsigned char*>(client.data()),
                          client.size());
        ASSERT_GT(len, 0u);
        EXPECT_EQ(rrl::key_slot(std::string_view(buf, len)),
                  slot("api:10.0.0.1"))
            << std::string(buf, len);
    }
}

TEST(KeySlot, OnlyTheGivenLengthCounts) {
    EXPECT_EQ(rrl::key_slot(std::string_view("foo{bar}", 3)), 12182u);
    EXPECT_EQ(rrl::key_slot(std::string_view("{bar}", 4)),
              4015u);  // "{bar": no tag
    EXPECT_EQ(rrl::key_slot({}), 0u);
}

// ---- error kinds ----

int kind(const std::string& error) {
    return rrl::error_kind(error);
}

TEST(ErrorKind, RedisErrorsTheModuleActsOn) {
    EXPECT_EQ(kind("MOVED 12182 127.0.0.1:27701"), RRL_REPLY_MOVED);
    EXPECT_EQ(kind("ASK 12182 127.0.0.1:27701"), RRL_REPLY_ASK);
    EXPECT_EQ(kind("TRYAGAIN Multiple keys request during rehashing of slot"),
              RRL_REPLY_TRYAGAIN);
    EXPECT_EQ(kind("CLUSTERDOWN Hash slot not served"), RRL_REPLY_CLUSTERDOWN);
    EXPECT_EQ(kind("CLUSTERDOWN The cluster is down"), RRL_REPLY_CLUSTERDOWN);
    EXPECT_EQ(kind("READONLY You can't write against a read only replica."),
              RRL_REPLY_READONLY);
    EXPECT_EQ(kind("MASTERDOWN Link with MASTER is down and "
                   "replica-serve-stale-data is set to 'no'."),
              RRL_REPLY_MASTERDOWN);
    EXPECT_EQ(kind("LOADING Redis is loading the dataset in memory"),
              RRL_REPLY_LOADING);
    EXPECT_EQ(kind("NOSCRIPT No matching script. Please use EVAL."),
              RRL_REPLY_NOSCRIPT);
    // the word alone
    EXPECT_EQ(kind("MOVED"), RRL_REPLY_MOVED);
    EXPECT_EQ(kind("ASK"), RRL_REPLY_ASK);
    EXPECT_EQ(kind("TRYAGAIN"), RRL_REPLY_TRYAGAIN);
    EXPECT_EQ(kind("CLUSTERDOWN"), RRL_REPLY_CLUSTERDOWN);
    EXPECT_EQ(kind("READONLY"), RRL_REPLY_READONLY);
    EXPECT_EQ(kind("MASTERDOWN"), RRL_REPLY_MASTERDOWN);
    EXPECT_EQ(kind("LOADING"), RRL_REPLY_LOADING);
}

TEST(ErrorKind, TheFirstWordExactly) {
    for (const std::string& e : std::vector<std::string>{
             "",
             " ",
             "ERR MOVED 1 a:1",
             "moved 1 a:1",
             "Moved 1 a:1",
             " MOVED 1 a:1",
             "MOVED\t1 a:1",
             "MOVEDX 1 a:1",
             "MOVE 1 a:1",
             "ASKING",
             "ASK_ 1 a:1",
             "readonly You can't write",
             "READONLY:",
             "LOADINGX",
             "TRYAGAIN\r\n",
             "CLUSTERDOWN\0"s,
             "MASTERDOWNx",
             "BUSY Redis is busy running a script",
             "ERR Error running script",
             "WRONGTYPE Operation against a key holding the wrong kind"}) {
        EXPECT_EQ(kind(e), RRL_REPLY_ERROR) << rrl::printable(e, 64);
    }
    EXPECT_EQ(rrl::error_kind(std::string_view("MOVED 1 a:1", 4)),
              RRL_REPLY_ERROR);
    EXPECT_EQ(rrl::error_kind(std::string_view("ASKING", 3)), RRL_REPLY_ASK);
    EXPECT_EQ(rrl::error_kind({}), RRL_REPLY_ERROR);
}

TEST(ErrorKind, NoScriptAsBefore) {
    for (const std::string& e :
         std::vector<std::string>{"NOSCRIPT", "NOSCRIPT x", "NOSCRIPTS",
                                  "NOSCRIPT\tx", "noscript x", ""}) {
        EXPECT_EQ(kind(e) == RRL_REPLY_NOSCRIPT, rrl::is_noscript(e)) << e;
    }
}

// ---- MOVED and ASK ----

struct Target {
    int rc;
    unsigned slot;
    std::string host;
    unsigned port;
};

constexpr unsigned kUntouched = 77777;

// parse_redirect() as RRL_OK with its target, or RRL_ERROR
Target redirect(const std::string& text) {
    Target t{RRL_ERROR, kUntouched, "", kUntouched};
    auto r = rrl::parse_redirect(text);
    if (r) {
        t = Target{RRL_OK, r->slot, r->target.host, r->target.port};
        EXPECT_LT(t.host.size(), std::size_t{RRL_HOST_MAX});
    }
    return t;
}

void expect_target(const std::string& text, unsigned slot,
                   const std::string& host, unsigned port) {
    Target t = redirect(text);
    ASSERT_EQ(t.rc, RRL_OK) << text;
    EXPECT_EQ(t.slot, slot) << text;
    EXPECT_EQ(t.host, host) << text;
    EXPECT_EQ(t.port, port) << text;
}

TEST(Redirect, MovedAndAsk) {
    expect_target("MOVED 12182 127.0.0.1:27701", 12182, "127.0.0.1", 27701);
    expect_target("ASK 3999 127.0.0.1:6381", 3999, "127.0.0.1", 6381);
    // cluster-preferred-endpoint-type hostname
    expect_target("MOVED 12182 node-27701.example:27701", 12182,
                  "node-27701.example", 27701);
    expect_target("MOVED 0 a:1", 0, "a", 1);
    expect_target("ASK 16383 redis-7.internal:65535", 16383, "redis-7.internal",
                  65535);
    expect_target("MOVED 00007 h:00080", 7, "h", 80);  // up to 5 digits
}

TEST(Redirect, IPv6) {
    expect_target("MOVED 1 ::1:7000", 1, "::1", 7000);  // the last ':'
    expect_target("MOVED 1 [::1]:7000", 1, "::1", 7000);
    expect_target("ASK 2 2001:db8::7:6379", 2, "2001:db8::7", 6379);
    expect_target("ASK 2 [2001:db8::7]:6379", 2, "2001:db8::7", 6379);
    expect_target("MOVED 3 fe80::1%eth0:6379", 3, "fe80::1%eth0", 6379);
    expect_target("MOVED 3 ::ffff:10.0.0.1:6379", 3, "::ffff:10.0.0.1", 6379);
}

TEST(Redirect, LongestHost) {
    const std::string longest(RRL_HOST_MAX - 1, 'h');
    expect_target("MOVED 5 " + longest + ":6379", 5, longest, 6379);
    expect_target("MOVED 5 [" + longest + "]:6379", 5, longest, 6379);
    EXPECT_EQ(redirect("MOVED 5 " + longest + "h:6379").rc, RRL_ERROR);
    EXPECT_EQ(redirect("MOVED 5 [" + longest + "h]:6379").rc, RRL_ERROR);
    EXPECT_EQ(redirect("MOVED 5 " + std::string(10000, 'h') + ":6379").rc,
              RRL_ERROR);
}

TEST(Redirect, Malformed) {
    for (const std::string& e : {
             ""s,
             "MOVED"s,
             "MOVED "s,
             "MOVED 3999"s,
             "MOVED 3999 "s,
             "MOVED 3999 127.0.0.1"s,
             "MOVED 3999 127.0.0.1:"s,
             "MOVED 3999 :6381"s,   // Redis 7, unknown-endpoint
             "MOVED 3999 ?:6381"s,  // Redis 7, hostname, none set
             "MOVED :6381"s,
             "MOVED 127.0.0.1:6381"s,
             "MOVED 16384 h:1"s,
             "MOVED 65535 h:1"s,
             "MOVED 99999 h:1"s,
             "MOVED 123456 h:1"s,
             "MOVED 000001 h:1"s,
             "MOVED -1 h:1"s,
             "MOVED +1 h:1"s,
             "MOVED 0x10 h:1"s,
             "MOVED 3a h:1"s,
             "MOVED  3999 h:1"s,
             "MOVED 3999  h:1"s,
             "MOVED\t3999 h:1"s,
             "MOVED 3999\th:1"s,
             "MOVED 3999 h:6381 "s,
             "MOVED 3999 h:6381 extra"s,
             "MOVED 3999 h:6381\r\n"s,
             "MOVED 3999 h:6381\0"s,
             "MOVED 3999 h:0"s,
             "MOVED 3999 h:65536"s,
             "MOVED 3999 h:99999"s,
             "MOVED 3999 h:123456"s,
             "MOVED 3999 h:-1"s,
             "MOVED 3999 h:+1"s,
             "MOVED 3999 h: 1"s,
             "MOVED 3999 h:0x10"s,
             "MOVED 3999 [::1:7000"s,
             "MOVED 3999 ::1]:7000"s,
             "MOVED 3999 []:7000"s,
             "MOVED 3999 [[::1]]:7000"s,
             "MOVED 3999 [:7000"s,
             "MOVED 3999 ]:7000"s,
             "MOVED 3999 a b:1"s,
             "MOVED 3999 h\x01:1"s,
             "MOVED 3999 h\x7f:1"s,
             "MOVED 3999 h\xff:1"s,
             "MOVED 3999 h\0x:1"s,
             "moved 3999 h:1"s,
             "ASKING 3999 h:1"s,
             "TRYAGAIN 3999 h:1"s,
             "ERR MOVED 3999 h:1"s,
             " MOVED 3999 h:1"s,
         }) {
        Target t = redirect(e);
        EXPECT_EQ(t.rc, RRL_ERROR) << rrl::printable(e, 80);
        EXPECT_EQ(t.slot, kUntouched);
        EXPECT_EQ(t.port, kUntouched);
        EXPECT_FALSE(rrl::parse_redirect(e)) << rrl::printable(e, 80);
    }
}

TEST(Redirect, OnlyTheGivenLengthCounts) {
    // not NUL-terminated: the text goes on past len
    const char text[] = "MOVED 3999 h:63819";
    auto r = rrl::parse_redirect(std::string_view(text, sizeof(text) - 2));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->target.port, 6381u);
    EXPECT_FALSE(rrl::parse_redirect(std::string_view(text, 12)));
    EXPECT_FALSE(rrl::parse_redirect({}));
}

// ---- replies as rrl::Value trees ----

// A reply as the engine hands it over: Node is the plain description,
// Tree the rrl::Value view of it (pointing into the Node it keeps).
struct Node {
    int type;
    long long integer;
    std::string str;
    std::vector<Node> elements;
};

Node bulk(std::string s) {
    return {rrl::kValueString, 0, std::move(s), {}};
}
Node status(std::string s) {
    return {rrl::kValueStatus, 0, std::move(s), {}};
}
Node error(std::string s) {
    return {rrl::kValueError, 0, std::move(s), {}};
}
Node integer(long long i) {
    return {rrl::kValueInteger, i, "", {}};
}
Node nil() {
    return {rrl::kValueNil, 0, "", {}};
}
Node array(std::vector<Node> e) {
    return {rrl::kValueArray, 0, "", std::move(e)};
}

class Tree {
   public:
    explicit Tree(Node node) : node_(std::move(node)) { root_ = view(node_); }
    Tree(const Tree&) = delete;
    Tree& operator=(const Tree&) = delete;

    const rrl::Value* get() const { return &root_; }

   private:
    rrl::Value view(const Node& n) {
        rrl::Value v{};
        v.type = n.type;
        v.integer = n.integer;
        if (n.type == rrl::kValueString || n.type == rrl::kValueStatus ||
            n.type == rrl::kValueError) {
            v.str = n.str.data();
            v.len = n.str.size();
        }
        if (n.type == rrl::kValueArray && !n.elements.empty()) {
            arrays_.emplace_back(new rrl::Value[n.elements.size()]);
            rrl::Value* elements = arrays_.back().get();
            for (std::size_t i = 0; i < n.elements.size(); i++) {
                elements[i] = view(n.elements[i]);
            }
            v.elements = elements;
            v.nelements = n.elements.size();
        }
        return v;
    }

    const Node node_;
    std::vector<std::unique_ptr<rrl::Value[]>> arrays_;
    rrl::Value root_;
};

struct Logged {
    int level;
    std::string message;
};

void collect(void* data, int level, const char* msg) {
    static_cast<std::vector<Logged>*>(data)->push_back({level, msg});
}

// Captures what the core logs: the parsers log nothing.
class ReplyParse : public ::testing::Test {
   protected:
    void SetUp() override { rrl_set_logger(collect, &logged_); }
    void TearDown() override { rrl_set_logger(nullptr, nullptr); }

    std::vector<Logged> logged_;
};

// ---- CLUSTER SLOTS ----

struct Range {
    unsigned start, end;
    std::string host;
    unsigned port;

    bool operator==(const Range& o) const {
        return start == o.start && end == o.end && host == o.host &&
               port == o.port;
    }
};

std::ostream& operator<<(std::ostream& os, const Range& r) {
    return os << r.start << "-" << r.end << " " << r.host << ":" << r.port;
}

struct Slots {
    int rc;
    std::vector<Range> ranges;
};

class ClusterSlots : public ReplyParse {
   protected:
    // parse_cluster_slots(): RRL_OK and at most max ranges, or RRL_ERROR
    // and why in error_; nothing logged
    Slots parse(Node reply, std::size_t max = 16) {
        Tree tree(std::move(reply));
        error_.clear();
        auto parsed = rrl::parse_cluster_slots(*tree.get(), max, &error_);
        EXPECT_TRUE(logged_.empty());
        Slots s{parsed ? RRL_OK : RRL_ERROR, {}};
        if (!parsed) return s;
        EXPECT_LE(parsed->size(), max);
        for (const rrl::SlotRange& r : *parsed) {
            EXPECT_LT(r.primary.host.size(), std::size_t{RRL_HOST_MAX});
            s.ranges.push_back(
                {r.start, r.end, r.primary.host, r.primary.port});
        }
        return s;
    }

    // refused, for this reason
    void expect_refused(Node reply, const std::string& why,
                        std::size_t max = 16) {
        EXPECT_EQ(parse(std::move(reply), max).rc, RRL_ERROR) << why;
        EXPECT_EQ(error_, why);
    }

    std::string error_;
};

const std::string kId1 = "6d5d5bde9a1419d5fdfc0e70c9a794b7a900cde1";
const std::string kId2 = "41f1e9edbb25358d9112d821f507a872085901d7";
const std::string kId3 = "39d285843fc59948bc25e7ce22d3b1f072809392";

// [host, port, id, metadata] as Redis 7 sends a node, RESP2
Node node7(Node host, long long port, const std::string& id,
           std::vector<Node> metadata) {
    return array(
        {std::move(host), integer(port), bulk(id), array(std::move(metadata))});
}

Node range(long long start, long long end, std::vector<Node> nodes) {
    std::vector<Node> e = {integer(start), integer(end)};
    for (Node& n : nodes) e.push_back(std::move(n));
    return array(std::move(e));
}

Node primary(const std::string& host, long long port) {
    return array({bulk(host), integer(port)});
}

TEST_F(ClusterSlots, Redis7WithHostnamesAndAReplica) {
    // three nodes (27703 a replica of 27701), cluster-announce-hostname
    // set, cluster-preferred-endpoint-type ip
    auto n1 = [] {
        return node7(bulk("127.0.0.1"), 27701, kId1,
                     {bulk("hostname"), bulk("node-27701.example")});
    };
    auto n2 = [] {
        return node7(bulk("127.0.0.1"), 27702, kId2,
                     {bulk("hostname"), bulk("node-27702.example")});
    };
    auto n3 = [] {
        return node7(bulk("127.0.0.1"), 27703, kId3,
                     {bulk("hostname"), bulk("node-27703.example")});
    };
    Slots s =
        parse(array({range(0, 5460, {n1(), n3()}), range(5461, 10922, {n2()}),
                     range(10923, 16383, {n1(), n3()})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges,
              (std::vector<Range>{{0, 5460, "127.0.0.1", 27701},
                                  {5461, 10922, "127.0.0.1", 27702},
                                  {10923, 16383, "127.0.0.1", 27701}}));
}

TEST_F(ClusterSlots, Redis7PreferringHostnames) {
    Slots s = parse(array({range(0, 5460,
                                 {node7(bulk("node-27701.example"), 27701, kId1,
                                        {bulk("ip"), bulk("127.0.0.1")}),
                                  node7(bulk("node-27703.example"), 27703, kId3,
                                        {bulk("ip"), bulk("127.0.0.1")})}),
                           range(5461, 16383,
                                 {node7(bulk("node-27702.example"), 27702, kId2,
                                        {bulk("ip"), bulk("127.0.0.1")})})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges,
              (std::vector<Range>{{0, 5460, "node-27701.example", 27701},
                                  {5461, 16383, "node-27702.example", 27702}}));
}

TEST_F(ClusterSlots, UnknownEndpointIsTheNodeAsked) {
    // unknown-endpoint: a nil host; hostname with none set: "?"; older
    // Redis without a known address: ""
    Slots s = parse(array(
        {range(0, 99,
               {node7(nil(), 27701, kId1,
                      {bulk("ip"), bulk("127.0.0.1"), bulk("hostname"),
                       bulk("node-27701.example")}),
                node7(nil(), 27703, kId3, {})}),
         range(100, 199, {node7(bulk("?"), 27702, kId2, {})}),
         range(200, 299, {array({bulk(""), integer(7000), bulk(kId3)})})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges, (std::vector<Range>{{0, 99, "", 27701},
                                            {100, 199, "", 27702},
                                            {200, 299, "", 7000}}));
}

TEST_F(ClusterSlots, OlderShapesAndAnyOrder) {
    // Redis 3.0: [host, port] only; ranges in any order, with gaps
    Slots s = parse(
        array({range(10923, 16383, {primary("10.0.0.3", 7002)}),
               range(0, 0, {primary("10.0.0.1", 7000)}),
               range(5461, 10922,
                     {primary("10.0.0.2", 7001), primary("10.0.0.4", 7003)}),
               range(1, 1, {primary("::1", 7004)})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges, (std::vector<Range>{{10923, 16383, "10.0.0.3", 7002},
                                            {0, 0, "10.0.0.1", 7000},
                                            {5461, 10922, "10.0.0.2", 7001},
                                            {1, 1, "::1", 7004}}));
}

TEST_F(ClusterSlots, NoSlotsYet) {
    Slots s = parse(array({}), 0);
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_TRUE(s.ranges.empty());
}

TEST_F(ClusterSlots, ReplicasAreNotRead) {
    Slots s = parse(array({range(
        0, 16383,
        {primary("10.0.0.1", 7000), integer(5), nil(), primary("", 0)})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges, (std::vector<Range>{{0, 16383, "10.0.0.1", 7000}}));
}

TEST_F(ClusterSlots, LongestHost) {
    const std::string longest(RRL_HOST_MAX - 1, 'h');
    Slots s = parse(array({range(0, 1, {primary(longest, 7000)})}));
    ASSERT_EQ(s.rc, RRL_OK);
    EXPECT_EQ(s.ranges, (std::vector<Range>{{0, 1, longest, 7000}}));
    expect_refused(array({range(0, 1, {primary(longest + "h", 7000)})}),
                   "range 1: bad host \"" + std::string(61, 'h') + "...\"");
}

TEST_F(ClusterSlots, NotAnArray) {
    expect_refused(nil(), "not an array");
    expect_refused(integer(3), "not an array");
    expect_refused(bulk("0 16383 127.0.0.1 7000"), "not an array");
    expect_refused(status("OK"), "not an array");
    expect_refused(error("ERR This instance has cluster support disabled"),
                   "not an array");

    // no reply at all: the answer's failure, logged by the engine
    std::string why;
    EXPECT_FALSE(rrl::cluster_slots_answer(nullptr, 1, &why));
    EXPECT_EQ(why, "failed: no reply");
    EXPECT_TRUE(logged_.empty());
}

TEST_F(ClusterSlots, MalformedEntries) {
    const std::string shape = "range 2: not [start, end, primary, ...]";
    Node ok = range(0, 99, {primary("a", 1)});
    expect_refused(array({ok, integer(0)}), shape);
    expect_refused(array({ok, nil()}), shape);
    expect_refused(array({ok, array({})}), shape);
    expect_refused(array({ok, array({integer(100), integer(199)})}), shape);
}

TEST_F(ClusterSlots, BadStartOrEnd) {
    const std::string bad = "range 1: bad slots";
    Node p = primary("a", 1);
    expect_refused(array({array({bulk("0"), integer(1), p})}), bad);
    expect_refused(array({array({integer(0), bulk("1"), p})}), bad);
    expect_refused(array({array({integer(0), status("1"), p})}), bad);
    expect_refused(array({array({nil(), integer(1), p})}), bad);
    expect_refused(array({range(-1, 1, {p})}), bad);
    expect_refused(array({range(0, 16384, {p})}), bad);
    expect_refused(array({range(16384, 16384, {p})}), bad);
    expect_refused(array({range(0, 1LL << 40, {p})}), bad);
    expect_refused(array({range(-(1LL << 40), 0, {p})}), bad);
    expect_refused(array({range(5, 4, {p})}), bad);
    expect_refused(array({range(16383, 0, {p})}), bad);
}

TEST_F(ClusterSlots, BadPrimary) {
    auto one = [](Node node) {
        return array({range(0, 1, {std::move(node)})});
    };
    expect_refused(one(bulk("127.0.0.1:7000")),
                   "range 1: primary is not [host, port, ...]");
    expect_refused(one(nil()), "range 1: primary is not [host, port, ...]");
    expect_refused(one(array({bulk("a")})),
                   "range 1: primary is not [host, port, ...]");
    expect_refused(one(array({integer(1), integer(7000)})),
                   "range 1: host is not a string");
    expect_refused(one(array({status("a"), integer(7000)})),
                   "range 1: host is not a string");
    expect_refused(one(array({array({}), integer(7000)})),
                   "range 1: host is not a string");
    expect_refused(one(primary("a b", 7000)), "range 1: bad host \"a b\"");
    expect_refused(one(primary("a\0b"s, 7000)),
                   "range 1: bad host \"a\\x00b\"");
    expect_refused(one(primary("[::1]", 7000)), "range 1: bad host \"[::1]\"");
    expect_refused(one(primary("a", 0)), "range 1: bad port 0");
    expect_refused(one(primary("a", 65536)), "range 1: bad port 65536");
    expect_refused(one(primary("a", -7000)), "range 1: bad port -7000");
    expect_refused(one(array({bulk("a"), bulk("7000")})),
                   "range 1: port is not an integer");
    expect_refused(one(array({bulk("a"), nil()})),
                   "range 1: port is not an integer");
}

TEST_F(ClusterSlots, OverlappingRanges) {
    Node p = primary("a", 1);
    expect_refused(array({range(0, 100, {p}), range(100, 200, {p})}),
                   "range 2: slot 100 is in an earlier range too");
    expect_refused(array({range(0, 100, {p}), range(50, 60, {p})}),
                   "range 2: slot 50 is in an earlier range too");
    expect_refused(array({range(50, 60, {p}), range(0, 100, {p})}),
                   "range 2: slot 50 is in an earlier range too");
    expect_refused(
        array({range(0, 9, {p}), range(20, 29, {p}), range(9, 9, {p})}),
        "range 3: slot 9 is in an earlier range too");
    expect_refused(array({range(16383, 16383, {p}), range(0, 16383, {p})}),
                   "range 2: slot 16383 is in an earlier range too");
    // touching is not overlapping
    EXPECT_EQ(parse(array({range(101, 200, {p}), range(0, 100, {p})})).rc,
              RRL_OK);
}

TEST_F(ClusterSlots, MoreThanMax) {
    Node p = primary("a", 1);
    Node three = array({range(0, 0, {p}), range(1, 1, {p}), range(2, 2, {p})});
    EXPECT_EQ(parse(three, 3).ranges.size(), 3u);
    expect_refused(three, "more than 2 ranges", 2);
    expect_refused(array({range(0, 0, {p})}), "more than 0 ranges", 0);
}

// ---- SENTINEL get-master-addr-by-name ----

struct SentinelAddr {
    int rc;
    std::string host;
    unsigned port;
};

class SentinelReply : public ReplyParse {
   protected:
    // parse_sentinel_primary(): RRL_OK with the address, kUnknown for
    // a name not known, or RRL_ERROR and why in error_; nothing logged
    SentinelAddr parse(Node reply) {
        Tree tree(std::move(reply));
        error_.clear();
        SentinelAddr a{RRL_ERROR, "", kUntouched};
        auto answer = rrl::parse_sentinel_primary(*tree.get(), &error_);
        EXPECT_TRUE(logged_.empty());
        if (!answer) return a;
        if (!answer->known) {
            a.rc = kUnknown;
            return a;
        }
        EXPECT_LT(answer->primary.host.size(), std::size_t{RRL_HOST_MAX});
        return SentinelAddr{RRL_OK, answer->primary.host, answer->primary.port};
    }

    void expect_addr(Node reply, const std::string& host, unsigned port) {
        SentinelAddr a = parse(std::move(reply));
        ASSERT_EQ(a.rc, RRL_OK) << host;
        EXPECT_EQ(a.host, host);
        EXPECT_EQ(a.port, port);
    }

    void expect_refused(Node reply, const std::string& why) {
        EXPECT_EQ(parse(std::move(reply)).rc, RRL_ERROR) << why;
        EXPECT_EQ(error_, why);
    }

    static constexpr int kUnknown = 1;
    std::string error_;
};

Node addr(std::string host, std::string port) {
    return array({bulk(std::move(host)), bulk(std::move(port))});
}

TEST_F(SentinelReply, Address) {
    expect_addr(addr("127.0.0.1", "27710"), "127.0.0.1", 27710);  // real
    expect_addr(addr("::1", "6379"), "::1", 6379);
    expect_addr(addr("redis-1.internal", "1"), "redis-1.internal", 1);
    expect_addr(addr("h", "65535"), "h", 65535);
    const std::string longest(RRL_HOST_MAX - 1, 'h');
    expect_addr(addr(longest, "6379"), longest, 6379);
}

TEST_F(SentinelReply, UnknownName) {
    SentinelAddr a = parse(nil());
    EXPECT_EQ(a.rc, kUnknown);
    EXPECT_TRUE(logged_.empty());
}

TEST_F(SentinelReply, Malformed) {
    const std::string shape = "not [host, port] as two strings";
    expect_refused(error("ERR Unknown sentinel subcommand"),
                   "error \"ERR Unknown sentinel subcommand\"");
    expect_refused(status("OK"), shape);
    expect_refused(bulk("127.0.0.1:6379"), shape);
    expect_refused(integer(6379), shape);
    expect_refused(array({}), shape);
    expect_refused(array({bulk("127.0.0.1")}), shape);
    expect_refused(array({bulk("127.0.0.1"), bulk("6379"), bulk("x")}), shape);
    expect_refused(array({bulk("127.0.0.1"), integer(6379)}), shape);
    expect_refused(array({status("127.0.0.1"), bulk("6379")}), shape);
    expect_refused(array({nil(), nil()}), shape);
    expect_refused(array({addr("127.0.0.1", "6379")}), shape);
}

TEST_F(SentinelReply, BadHostOrPort) {
    for (const std::string& port : std::vector<std::string>{
             "", "0", "65536", "99999", "123456", "-1", "+1", " 1", "1 ",
             "0x10", "abc", "6379\r\n"}) {
        expect_refused(addr("h", port),
                       "bad port \"" + rrl::printable(port, 64) + "\"");
    }
    expect_refused(addr("", "6379"), "bad host \"\"");
    expect_refused(addr("?", "6379"), "bad host \"?\"");
    expect_refused(addr("a b", "6379"), "bad host \"a b\"");
    expect_refused(addr("a\0b"s, "6379"), "bad host \"a\\x00b\"");
    expect_refused(addr("[::1]", "6379"), "bad host \"[::1]\"");
    expect_refused(addr(std::string(RRL_HOST_MAX, 'h'), "6379"),
                   "bad host \"" + std::string(61, 'h') + "...\"");
}

TEST_F(SentinelReply, NoReply) {
    // no reply at all: the answer's failure, logged by the engine
    std::string why;
    EXPECT_FALSE(rrl::sentinel_answer(nullptr, "mymaster", &why));
    EXPECT_EQ(why, "failed: no reply");
    EXPECT_TRUE(logged_.empty());
}

}  // namespace
