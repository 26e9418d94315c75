// A worker's reply objects (rrl::engine::reply_objects): the tree hiredis'
// own functions build, from objects and element arrays used again, within
// bounds, and each still freeReplyObject()'s to free.
#include "engine/reply_objects.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace {

using rrl::engine::arrays_kept;
using rrl::engine::objects_kept;

// A redisReader with the functions given (hiredis' own by default).
class Reader {
   public:
    explicit Reader(bool recycled = true) : r_(redisReaderCreate()) {
        if (recycled) r_->fn = &rrl::engine::reply_objects;
    }
    ~Reader() { redisReaderFree(r_); }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    void feed(const std::string& resp) {
        ASSERT_EQ(redisReaderFeed(r_, resp.data(), resp.size()), REDIS_OK);
    }
    // the next whole reply, or null
    redisReply* next() {
        void* reply = nullptr;
        EXPECT_EQ(redisReaderGetReply(r_, &reply), REDIS_OK) << r_->errstr;
        return static_cast<redisReply*>(reply);
    }
    redisReply* read(const std::string& resp) {
        feed(resp);
        return next();
    }
    void free(redisReply* reply) { r_->fn->freeObject(reply); }
    redisReader* get() { return r_; }

   private:
    redisReader* r_;
};

class ReplyObjects : public ::testing::Test {
   protected:
    void SetUp() override { rrl::engine::release_reply_objects(); }
    void TearDown() override { rrl::engine::release_reply_objects(); }
};

// the objects of a tree, root first
void objects(const redisReply* r, std::vector<const void*>& out) {
    out.push_back(r);
    if (r->element == nullptr) return;
    for (size_t i = 0; i < r->elements; i++) objects(r->element[i], out);
}

bool aggregate(int type) {
    return type == REDIS_REPLY_ARRAY
#if HIREDIS_MAJOR >= 1
           || type == REDIS_REPLY_MAP || type == REDIS_REPLY_SET ||
           type == REDIS_REPLY_PUSH
#endif
        ;
}

// the same reply, field by field
void expect_same(const redisReply* a, const redisReply* b,
                 const std::string& at = "reply") {
    ASSERT_NE(a, nullptr) << at;
    ASSERT_NE(b, nullptr) << at;
    EXPECT_EQ(a->type, b->type) << at;
    EXPECT_EQ(a->integer, b->integer) << at;
    EXPECT_EQ(a->len, b->len) << at;
    EXPECT_EQ(a->elements, b->elements) << at;
    EXPECT_EQ(a->str == nullptr, b->str == nullptr) << at;
    if (a->str != nullptr && b->str != nullptr) {
        EXPECT_EQ(std::string(a->str, a->len + 1),
                  std::string(b->str, b->len + 1))
            << at;
    }
#if HIREDIS_MAJOR >= 1
    EXPECT_EQ(a->dval, b->dval) << at;
    EXPECT_STREQ(a->vtype, b->vtype) << at;
#endif
    EXPECT_EQ(a->element == nullptr, b->element == nullptr) << at;
    if (!aggregate(a->type) || a->element == nullptr || b->element == nullptr)
        return;
    for (size_t i = 0; i < a->elements && i < b->elements; i++) {
        expect_same(a->element[i], b->element[i],
                    at + "[" + std::to_string(i) + "]");
    }
}

// hiredis' own reader and ours read resp to the same tree
void expect_as_hiredis(const std::string& resp) {
    SCOPED_TRACE(resp);
    Reader theirs(false), ours;
    redisReply* a = theirs.read(resp);
    redisReply* b = ours.read(resp);
    expect_same(a, b);
    theirs.free(a);
    ours.free(b);
}

std::string integers(size_t n) {
    std::string s = "*" + std::to_string(n) + "\r\n";
    for (size_t i = 0; i < n; i++) s += ":" + std::to_string(i) + "\r\n";
    return s;
}

TEST_F(ReplyObjects, ABatchOfIntegersReadsAsHiredisReadsIt) {
    Reader reader;
    redisReply* r = reader.read("*3\r\n:1\r\n:-2\r\n:9223372036854775807\r\n");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(r->elements, 3u);
    EXPECT_EQ(r->element[0]->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(r->element[0]->integer, 1);
    EXPECT_EQ(r->element[1]->integer, -2);
    EXPECT_EQ(r->element[2]->integer, INT64_MAX);
    reader.free(r);
    expect_as_hiredis(integers(100));
}

TEST_F(ReplyObjects, StringsErrorsStatusNilAndNestedArraysReadAsHiredis) {
    expect_as_hiredis("$5\r\nhello\r\n");
    expect_as_hiredis("$0\r\n\r\n");
    expect_as_hiredis("$-1\r\n");
    expect_as_hiredis("*-1\r\n");
    expect_as_hiredis("*0\r\n");
    expect_as_hiredis("+OK\r\n");
    expect_as_hiredis("-NOSCRIPT No matching script\r\n");
    expect_as_hiredis(":42\r\n");
    expect_as_hiredis(
        "*5\r\n*2\r\n$3\r\nfoo\r\n$-1\r\n-ERR bad\r\n+QUEUED\r\n*0\r\n"
        "*1\r\n*1\r\n*2\r\n:7\r\n$1\r\nx\r\n");
    // CLUSTER SLOTS' shape
    expect_as_hiredis(
        "*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n"
        "$40\r\n0123456789012345678901234567890123456789\r\n"
        "*3\r\n:8192\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7001\r\n");
}

#if HIREDIS_MAJOR >= 1
TEST_F(ReplyObjects, Resp3TypesReadAsHiredis) {
    expect_as_hiredis(",3.25\r\n");
    expect_as_hiredis(",inf\r\n");
    expect_as_hiredis("#t\r\n");
    expect_as_hiredis("#f\r\n");
    expect_as_hiredis("_\r\n");
    expect_as_hiredis("(12345678901234567890\r\n");
    expect_as_hiredis("=8\r\ntxt:abcd\r\n");
    expect_as_hiredis("%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n,1.5\r\n");
    expect_as_hiredis("~3\r\n:1\r\n#t\r\n_\r\n");
    expect_as_hiredis(">2\r\n$7\r\nmessage\r\n=7\r\nmkd:x\ny\r\n");
}
#endif

TEST_F(ReplyObjects, AFreedReplysObjectsAreUsedAgain) {
    Reader reader;
    redisReply* r = reader.read(integers(10));
    ASSERT_NE(r, nullptr);
    std::vector<const void*> first;
    objects(r, first);
    const void* elements = r->element;
    reader.free(r);
    EXPECT_EQ(objects_kept(), 11u);
    EXPECT_EQ(arrays_kept(), 1u);

    r = reader.read(integers(10));
    ASSERT_NE(r, nullptr);
    std::vector<const void*> second;
    objects(r, second);
    EXPECT_EQ(std::set<const void*>(first.begin(), first.end()),
              std::set<const void*>(second.begin(), second.end()));
    EXPECT_EQ(r->element, elements);
    EXPECT_EQ(objects_kept(), 0u);
    EXPECT_EQ(arrays_kept(), 0u);
    for (size_t i = 0; i < 10; i++) EXPECT_EQ(r->element[i]->integer, int(i));
    reader.free(r);
}

TEST_F(ReplyObjects, AnObjectUsedAgainIsAsNew) {
    Reader reader;
    // a string, an error and an array leave objects with their fields set
    reader.free(reader.read("*3\r\n$3\r\nabc\r\n-ERR x\r\n*1\r\n:5\r\n"));
    EXPECT_EQ(objects_kept(), 5u);
    expect_as_hiredis("*5\r\n:1\r\n$-1\r\n:2\r\n*0\r\n:3\r\n");
    // an element array of capacity 4 used again for 3 elements, then for 4
    reader.free(reader.read("*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"));
    expect_as_hiredis("*3\r\n:1\r\n:2\r\n:3\r\n");
}

TEST_F(ReplyObjects, WhatIsKeptIsBounded) {
    Reader reader;
    // an element array over kArrayCapacityMax is free()d
    const size_t n = rrl::engine::kObjectsKept + 500;
    ASSERT_GT(n, rrl::engine::kArrayCapacityMax);
    reader.free(reader.read(integers(n)));
    EXPECT_EQ(objects_kept(), rrl::engine::kObjectsKept);
    EXPECT_EQ(arrays_kept(), 0u);

    // so many arrays of each capacity
    rrl::engine::release_reply_objects();
    std::vector<redisReply*> held;
    for (int i = 0; i < 40; i++) held.push_back(reader.read(integers(2)));
    for (int i = 0; i < 10; i++) held.push_back(reader.read(integers(100)));
    for (redisReply* r : held) reader.free(r);
    EXPECT_EQ(arrays_kept(),
              rrl::engine::kArraysKept(2) + rrl::engine::kArraysKept(128));
    EXPECT_EQ(arrays_kept(), 16u + 4u);
}

TEST_F(ReplyObjects, AHalfReadReplyIsFreedWithItsReader) {
    {
        Reader reader;
        reader.feed("*3\r\n:1\r\n*2\r\n$3\r\nabc\r\n");
        EXPECT_EQ(reader.next(), nullptr);
    }  // redisReaderFree() frees the tree read so far
    EXPECT_EQ(objects_kept(), 4u);
    EXPECT_EQ(arrays_kept(), 2u);
}

TEST_F(ReplyObjects, AReplyCutByAProtocolErrorIsFreedWithItsReader) {
    {
        Reader reader;
        reader.feed("*3\r\n:1\r\n$2\r\nab\r\n?x\r\n");
        void* reply = nullptr;
        EXPECT_EQ(redisReaderGetReply(reader.get(), &reply), REDIS_ERR);
        EXPECT_EQ(reply, nullptr);
    }
    EXPECT_EQ(objects_kept(), 3u);
    EXPECT_EQ(arrays_kept(), 1u);
}

TEST_F(ReplyObjects, FreeReplyObjectFreesAReplyBuiltHere) {
    Reader reader;
    // objects and arrays used again (an array of capacity 4 for 3)
    reader.free(reader.read("*4\r\n:1\r\n$1\r\na\r\n:3\r\n*2\r\n:4\r\n:5\r\n"));
    redisReply* r = reader.read("*3\r\n$2\r\nab\r\n*2\r\n:1\r\n-E\r\n:2\r\n");
    ASSERT_NE(r, nullptr);
    freeReplyObject(r);  // hiredis' own: free() on each, no leak
    reader.free(reader.read(integers(3000)));
    freeReplyObject(reader.read(integers(3000)));
}

#if defined(__SANITIZE_ADDRESS__)
// The child's report on its stderr, where EXPECT_DEATH reads it, even when
// ASAN_OPTIONS sends reports to files (log_path=, as scripts/test.sh does):
// nothing is left there for the run's check of reports either.
void report_to_stderr() {
    __sanitizer_set_report_path("stderr");
}

TEST_F(ReplyObjects, AnObjectReadAfterItsFreeIsCaughtUnderASan) {
    Reader reader;
    redisReply* r = reader.read(integers(2));
    ASSERT_NE(r, nullptr);
    const redisReply* first = r->element[0];
    reader.free(r);
    ASSERT_EQ(objects_kept(), 3u);
    EXPECT_DEATH(
        {
            report_to_stderr();
            std::fprintf(stderr, "%lld\n",
                         *(const volatile long long*)&first->integer);
        },
        "use-after-poison");
}

TEST_F(ReplyObjects, AReplyFreedTwiceIsCaughtUnderASan) {
    Reader reader;
    redisReply* r = reader.read(":1\r\n");
    ASSERT_NE(r, nullptr);
    reader.free(r);
    // its type is read first
    EXPECT_DEATH(
        {
            report_to_stderr();
            reader.free(r);
        },
        "use-after-poison");
}
#endif

}  // namespace
