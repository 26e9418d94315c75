// Redis key of a client's state: rrl:{<zone>:<client key>}:<tag>, hashing
// of long or '#'-prefixed client keys, zone name validation, and the
// printable (escaped, bounded) form of keys used in logs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "script/algorithm.hpp"
#include "script/key.hpp"
#include "api/rrl.h"
#include "tests/unit/script/sha1_reference.hpp"

namespace {

// Builds through the C API into a buffer exactly rrl_key_max_len() long,
// followed by guard bytes that must stay untouched.
std::string c_key(const std::string& zone, int algorithm,
                  const std::string& client) {
    const size_t max = rrl_key_max_len(zone.size());
    std::vector<char> buf(max + 16, '\x5a');
    size_t n = rrl_key_build(buf.data(), zone.data(), zone.size(), algorithm,
                             reinterpret_cast<const unsigned char*>(client.data()),
                             client.size());
    EXPECT_LE(n, max);
    for (size_t i = max; i < buf.size(); i++) {
        EXPECT_EQ(buf[i], '\x5a') << "wrote past rrl_key_max_len at " << i;
    }
    return std::string(buf.data(), n);
}

TEST(KeyBuild, ExactFormatPerAlgorithm) {
    EXPECT_EQ(c_key("api", RRL_FIXED_WINDOW, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:fw");
    EXPECT_EQ(c_key("api", RRL_SLIDING_LOG, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:sl");
    EXPECT_EQ(c_key("api", RRL_SLIDING_WINDOW, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:sw");
    EXPECT_EQ(c_key("api", RRL_TOKEN_BUCKET, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:tb");
    EXPECT_EQ(c_key("api", RRL_LEAKY_BUCKET, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:lb");
    // the alias shares leaky_bucket's keys: it is the same algorithm
    EXPECT_EQ(c_key("api", rrl::find_algorithm("gcra")->id, "10.0.0.1"),
              "rrl:{api:10.0.0.1}:lb");
    EXPECT_EQ(rrl::build_key("per-ip", *rrl::algorithm(RRL_FIXED_WINDOW), "u:1"),
              "rrl:{per-ip:u:1}:fw");
    EXPECT_EQ(rrl::build_key("z", *rrl::algorithm(RRL_SLIDING_LOG), ""),
              "rrl:{z:}:sl");
    EXPECT_EQ(rrl::build_key("z", *rrl::algorithm(RRL_TOKEN_BUCKET), ""),
              "rrl:{z:}:tb");
    // hashed client keys keep the tag
    const std::string client(129, 'k');
    EXPECT_EQ(c_key("zone", RRL_SLIDING_WINDOW, client),
              "rrl:{zone:#b4cc423df271afe3df9415c3778f5e7f557e8a29}:sw");
    EXPECT_EQ(c_key("zone", RRL_LEAKY_BUCKET, client),
              "rrl:{zone:#b4cc423df271afe3df9415c3778f5e7f557e8a29}:lb");
}

// an algorithm's id by its name, RRL_ERROR for none
int algorithm_id(std::string_view name) {
    const rrl::Algorithm* a = rrl::find_algorithm(name);
    return a == nullptr ? RRL_ERROR : a->id;
}

TEST(KeyBuild, AlgorithmTable) {
    struct Row {
        const char* name;
        int id;
        const char* tag;
    };
    const std::vector<Row> rows = {
        {"fixed_window", RRL_FIXED_WINDOW, "fw"},
        {"sliding_log", RRL_SLIDING_LOG, "sl"},
        {"sliding_window", RRL_SLIDING_WINDOW, "sw"},
        {"token_bucket", RRL_TOKEN_BUCKET, "tb"},
        {"leaky_bucket", RRL_LEAKY_BUCKET, "lb"},
    };
    ASSERT_EQ(rows.size(), static_cast<size_t>(RRL_ALGORITHM_COUNT));
    std::vector<std::string> tags;
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        SCOPED_TRACE(r.name);
        EXPECT_EQ(r.id, static_cast<int>(i));  // ids are 0..count-1
        EXPECT_EQ(algorithm_id(r.name), r.id);
        EXPECT_STREQ(rrl::algorithm(r.id)->name.data(), r.name);
        const rrl::Algorithm* a = rrl::algorithm(r.id);
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(a->id, r.id);
        EXPECT_EQ(a->name, r.name);
        EXPECT_EQ(a->key_tag, r.tag);
        EXPECT_EQ(rrl::find_algorithm(r.name), a);
        // the name is parsed by its length, not up to a NUL
        const std::string longer = std::string(r.name) + "x";
        EXPECT_EQ(algorithm_id(longer), RRL_ERROR);
        EXPECT_EQ(algorithm_id({longer.data(), longer.size() - 1}), r.id);
        EXPECT_EQ(algorithm_id({r.name, std::strlen(r.name) - 1}), RRL_ERROR);
        tags.push_back(r.tag);
    }
    std::sort(tags.begin(), tags.end());
    EXPECT_EQ(std::unique(tags.begin(), tags.end()), tags.end())
        << "key tags must differ";

    // "gcra" is an alias: parsed to leaky_bucket, never named
    EXPECT_EQ(algorithm_id("gcra"), RRL_LEAKY_BUCKET);
    EXPECT_EQ(rrl::find_algorithm("gcra"), rrl::algorithm(RRL_LEAKY_BUCKET));
    EXPECT_STREQ(rrl::algorithm(algorithm_id("gcra"))->name.data(),
                 "leaky_bucket");
    EXPECT_EQ(algorithm_id("GCRA"), RRL_ERROR);
    EXPECT_EQ(algorithm_id("gcr"), RRL_ERROR);
    EXPECT_EQ(algorithm_id("gcra "), RRL_ERROR);

    EXPECT_EQ(RRL_DEFAULT_ALGORITHM, RRL_SLIDING_WINDOW);
    EXPECT_STREQ(rrl::algorithm(RRL_DEFAULT_ALGORITHM)->name.data(),
                 "sliding_window");

    for (const char* bad : {"fixed", "fixed_window!", "", "sliding", "token",
                            "leaky", "bucket", "Fixed_Window", "fw", "lb",
                            "sliding_windows", "token-bucket"}) {
        EXPECT_EQ(algorithm_id(bad), RRL_ERROR) << bad;
        EXPECT_EQ(rrl::find_algorithm(bad), nullptr) << bad;
    }
    EXPECT_EQ(rrl::algorithm(-1), nullptr);
    EXPECT_EQ(rrl::algorithm(RRL_ALGORITHM_COUNT), nullptr);
}

TEST(KeyBuild, UnknownAlgorithmIsAnError) {
    char buf[512];
    const unsigned char k[] = "x";
    EXPECT_EQ(rrl_key_build(buf, "api", 3, RRL_ALGORITHM_COUNT, k, 1), 0u);
    EXPECT_EQ(rrl_key_build(buf, "api", 3, -1, k, 1), 0u);
}

TEST(KeyBuild, BinaryBytesKeptVerbatim) {
    const std::string client("a\0b\xff\x01{}\n", 8);
    const std::string expected = std::string("rrl:{z:") + client + "}:fw";
    EXPECT_EQ(c_key("z", RRL_FIXED_WINDOW, client), expected);
    EXPECT_EQ(c_key("z", RRL_FIXED_WINDOW, client).size(), 7u + 8u + 4u);
}

TEST(KeyBuild, ExactlyRawMaxIsKeptRaw) {
    const std::string client(RRL_KEY_RAW_MAX, 'k');
    ASSERT_EQ(client.size(), 128u);
    EXPECT_EQ(c_key("zone", RRL_FIXED_WINDOW, client),
              "rrl:{zone:" + client + "}:fw");
}

TEST(KeyBuild, OneOverRawMaxIsHashed) {
    const std::string client(129, 'k');
    // head -c 129 /dev/zero | tr '\0' k | sha1sum
    const std::string expected =
        "rrl:{zone:#b4cc423df271afe3df9415c3778f5e7f557e8a29}:fw";
    EXPECT_EQ(rrl_test::reference_sha1_hex(client),
              "b4cc423df271afe3df9415c3778f5e7f557e8a29");
    EXPECT_EQ(c_key("zone", RRL_FIXED_WINDOW, client), expected);
    EXPECT_EQ(c_key("zone", RRL_SLIDING_LOG, client),
              "rrl:{zone:#b4cc423df271afe3df9415c3778f5e7f557e8a29}:sl");
}

TEST(KeyBuild, RawKeyStartingWithHashIsHashed) {
    // printf '#abc' | sha1sum
    EXPECT_EQ(c_key("zone", RRL_FIXED_WINDOW, "#abc"),
              "rrl:{zone:#a620f225fbbad05284977d64e623a54608db9d76}:fw");
    // ...so a client can never pick the key another one is hashed to.
    const std::string long_key(200, 'k');
    const std::string forged = "#" + rrl_test::reference_sha1_hex(long_key);
    EXPECT_NE(c_key("zone", RRL_FIXED_WINDOW, forged),
              c_key("zone", RRL_FIXED_WINDOW, long_key));
    // A '#' elsewhere is an ordinary byte.
    EXPECT_EQ(c_key("zone", RRL_FIXED_WINDOW, "a#"), "rrl:{zone:a#}:fw");
}

TEST(KeyBuild, HashedKeysAreOfTheWholeLongKey) {
    std::string a(300, 'x');
    std::string b = a;
    b[299] = 'y';  // differs only past the first 128 bytes
    EXPECT_NE(c_key("z", RRL_FIXED_WINDOW, a), c_key("z", RRL_FIXED_WINDOW, b));
    EXPECT_EQ(c_key("z", RRL_FIXED_WINDOW, b),
              "rrl:{z:#" + rrl_test::reference_sha1_hex(b) + "}:fw");
}

TEST(KeyBuild, MaxLenBoundHoldsForEveryKeyLength) {
    for (const std::string& zone :
         std::vector<std::string>{"a", "api", std::string(60, 'z')}) {
        const size_t max = rrl_key_max_len(zone.size());
        EXPECT_EQ(max, rrl::key_max_len(zone.size()));
        for (size_t n = 0; n <= 300; n++) {
            for (char first : {'k', '#'}) {
                std::string client(n, 'k');
                if (n > 0) client[0] = first;
                for (int alg = 0; alg < RRL_ALGORITHM_COUNT; alg++) {
                    std::string key = c_key(zone, alg, client);
                    ASSERT_FALSE(key.empty());
                    ASSERT_LE(key.size(), max) << zone << " " << n;
                    ASSERT_EQ(key, rrl::build_key(zone, *rrl::algorithm(alg),
                                                  client));
                }
            }
        }
        // The bound is reached by a raw key of exactly RRL_KEY_RAW_MAX bytes.
        EXPECT_EQ(c_key(zone, RRL_FIXED_WINDOW, std::string(128, 'k')).size(),
                  max);
    }
}

TEST(ZoneName, Accepted) {
    for (const char* zone : {"api", "per-ip_v1.2", "a", "Z9~!", "x/y"}) {
        EXPECT_TRUE(rrl::zone_name_valid(zone)) << zone;
    }
}

TEST(ZoneName, Rejected) {
    const std::vector<std::string> bad = {
        "",        "a b",         " api",       "api ",
        "a{b",     "a}b",         "{api}",      "a\tb",
        "a\nb",    std::string("a\0b", 3),      "a\x01",
        "a\x1f",   "a\x7f",       "caf\xc3\xa9", "\xff",
        // ':' would let zone "a:b" + key "c" share a key with "a" + "b:c"
        "a:b",     ":"};
    for (const std::string& zone : bad) {
        EXPECT_FALSE(rrl::zone_name_valid(zone))
            << testing::PrintToString(zone);
    }
}

// rrl::printable() of s within size bytes
std::string c_printable(size_t size, const std::string& s) {
    std::string out = rrl::printable(s, size);
    EXPECT_LE(out.size(), size) << "size " << size;
    return out;
}

TEST(Printable, PlainAsciiUnchanged) {
    EXPECT_EQ(c_printable(64, "10.0.0.1 user/{x}~"), "10.0.0.1 user/{x}~");
    EXPECT_EQ(c_printable(64, ""), "");
}

TEST(Printable, EscapesAsHex) {
    EXPECT_EQ(c_printable(64, std::string("\x00", 1)), "\\x00");
    EXPECT_EQ(c_printable(64, "\x7f"), "\\x7f");
    EXPECT_EQ(c_printable(64, "\""), "\\x22");
    EXPECT_EQ(c_printable(64, "\\"), "\\x5c");
    EXPECT_EQ(c_printable(64, "\xff"), "\\xff");
    EXPECT_EQ(c_printable(64, "\x1f"), "\\x1f");
    EXPECT_EQ(c_printable(64, std::string("a\0\"b\\\x7f\xff\n", 8)),
              "a\\x00\\x22b\\x5c\\x7f\\xff\\x0a");
    EXPECT_EQ(rrl::printable("\x80 ~", 100), "\\x80 ~");
}

TEST(Printable, TruncatesWithDotsWithinSize) {
    // size 8 leaves 5 bytes of text and 3 of "..."
    EXPECT_EQ(c_printable(8, "abcdefghij"), "abcde...");
    // an escape that does not fit is not cut in half
    EXPECT_EQ(c_printable(8, "abc\x01zz"), "abc...");
    EXPECT_EQ(c_printable(8, "abcd\x01z"), "abcd...");
    // text that fits is never cut
    EXPECT_EQ(c_printable(4, "ab"), "ab");
    EXPECT_EQ(c_printable(4, "abcd"), "abcd");
    EXPECT_EQ(c_printable(4, "abcde"), "a...");
    EXPECT_EQ(c_printable(8, "abcdefgh"), "abcdefgh");
    EXPECT_EQ(rrl::printable("abcdef", 3), "...");
}

// no caller asks for less than the dots (the C buffer that held at most
// size bytes went with rrl_printable()): a cut text is the dots alone
TEST(Printable, BelowTheDotsACutTextIsTheDots) {
    for (size_t size = 0; size < 4; size++) {
        EXPECT_EQ(rrl::printable("abcdef", size), "...") << size;
    }
}

TEST(Printable, NeverExceedsSizeAndIsAPrefixOfTheFullEscape) {
    std::string input;
    for (int i = 0; i < 60; i++) {
        input.push_back(static_cast<char>(i % 3 == 0 ? (i * 37) & 0xff : 'a' + i % 26));
    }
    for (size_t len = 0; len <= input.size(); len++) {
        const std::string s = input.substr(0, len);
        const std::string full = rrl::printable(s, 100000);
        for (size_t size = 4; size <= 260; size++) {
            const std::string out = c_printable(size, s);
            ASSERT_LE(out.size(), size);
            if (out.size() >= 3 && out.compare(out.size() - 3, 3, "...") == 0 &&
                out != full) {
                const std::string kept = out.substr(0, out.size() - 3);
                ASSERT_EQ(full.compare(0, kept.size(), kept), 0) << size;
                ASSERT_LE(kept.size(), size - 3);
            } else {
                ASSERT_EQ(out, full) << "len " << len << " size " << size;
            }
        }
    }
}

}  // namespace
