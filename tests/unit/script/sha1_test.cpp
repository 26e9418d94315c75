// rrl::sha1 / rrl::sha1_hex: FIPS 180 vectors, every padding boundary, and
// the digest of the embedded script that EVALSHA relies on.
#include "script/sha1.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>

#include "api/rrl.h"
#include "script/script.hpp"
#include "tests/unit/script/sha1_reference.hpp"

namespace {

TEST(Sha1, FipsVectors) {
    EXPECT_EQ(rrl::sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(rrl::sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(rrl::sha1_hex(
                  "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

TEST(Sha1, OneMillionA) {
    EXPECT_EQ(rrl::sha1_hex(std::string(1000000, 'a')),
              "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1, RawDigestMatchesHex) {
    auto digest = rrl::sha1("abc");
    const unsigned char expected[20] = {
        0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e,
        0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d};
    for (int i = 0; i < 20; i++) EXPECT_EQ(digest[i], expected[i]) << i;
}

// Lengths around the 55/56-byte padding split and the 64-byte block, with
// digests precomputed by `head -c N /dev/zero | tr '\0' a | sha1sum`.
struct LengthCase {
    std::size_t length;
    const char* digest;
};

void PrintTo(const LengthCase& c, std::ostream* os) {
    *os << c.length << "xa";
}

class Sha1Length : public ::testing::TestWithParam<LengthCase> {};

TEST_P(Sha1Length, MatchesSha1sum) {
    std::string input(GetParam().length, 'a');
    EXPECT_EQ(rrl::sha1_hex(input), GetParam().digest);
    EXPECT_EQ(rrl_test::reference_sha1_hex(input), GetParam().digest);
}

INSTANTIATE_TEST_SUITE_P(
    PaddingBoundaries, Sha1Length,
    ::testing::Values(
        LengthCase{55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"},
        LengthCase{56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"},
        LengthCase{63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"},
        LengthCase{64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"},
        LengthCase{65, "11655326c708d70319be2610e8a57d9a5b959d3b"},
        LengthCase{119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56"},
        LengthCase{120, "f34c1488385346a55709ba056ddd08280dd4c6d6"},
        LengthCase{128, "ad5b3fdbcb526778c2839d2f151ea753995e26a0"}));

// Every length from 0 to 300 bytes of non-ASCII, NUL-containing data
// against the independent reference implementation.
TEST(Sha1, AgreesWithReferenceForEveryLengthUpTo300) {
    std::string data;
    for (std::size_t n = 0; n <= 300; n++) {
        ASSERT_EQ(rrl::sha1_hex(data), rrl_test::reference_sha1_hex(data))
            << "length " << n;
        data.push_back(static_cast<char>((n * 151 + 7) & 0xff));
    }
}

TEST(Sha1, BinaryBytes) {
    // printf '\x00\xff' | sha1sum
    EXPECT_EQ(rrl::sha1_hex(std::string("\x00\xff", 2)),
              "aa3e5dcdd77b153f2e59bd0d8794fde33cb4e486");
}

TEST(ScriptSha1, IsSha1OfTheScript) {
    std::string_view script_text = rrl::script();
    const char* script = script_text.data();
    size_t len = script_text.size();
    ASSERT_NE(script, nullptr);
    ASSERT_GT(len, 0u);
    const char* sha = rrl_script_sha1();
    ASSERT_NE(sha, nullptr);
    std::string expected = rrl_test::reference_sha1_hex({script, len});
    EXPECT_EQ(std::string(sha), expected);
    EXPECT_EQ(std::string(sha).size(), 40u);
    // Stable across calls (computed once).
    EXPECT_EQ(rrl_script_sha1(), sha);
}

TEST(ScriptSha1, ScriptHoldsEveryPartAndNoNul) {
    std::string_view text_text = rrl::script();
    const char* text = text_text.data();
    size_t len = text_text.size();
    ASSERT_GT(len, 0u);
    std::string script(text, len);
    EXPECT_EQ(script.find('\0'), std::string::npos);
    EXPECT_NE(script.find("local fixed_window = lazy("), std::string::npos);
    EXPECT_NE(script.find("local sliding_log = lazy("), std::string::npos);
    // What they share comes first, the driver after the algorithms it
    // dispatches to.
    EXPECT_LT(script.find("local function lazy("),
              script.find("local fixed_window = lazy("));
    EXPECT_GT(script.find("local algorithms = {"),
              script.find("local sliding_log = lazy("));
    EXPECT_EQ(script.back(), '\n');
}

}  // namespace
