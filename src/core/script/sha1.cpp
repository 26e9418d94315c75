#include "script/sha1.hpp"

namespace rrl {

namespace {

std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void compress(std::uint32_t h[5], const std::uint8_t block[64]) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; i++) {
        w[i] = std::uint32_t{block[i * 4]} << 24 |
               std::uint32_t{block[i * 4 + 1]} << 16 |
               std::uint32_t{block[i * 4 + 2]} << 8 | block[i * 4 + 3];
    }
    for (int i = 16; i < 80; i++) {
        w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }

    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        std::uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

}  // namespace

std::array<std::uint8_t, 20> sha1(std::string_view data) {
    std::uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                          0xc3d2e1f0};
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(data.data());
    std::size_t full = data.size() / 64 * 64;

    for (std::size_t i = 0; i < full; i += 64) compress(h, bytes + i);

    std::uint8_t tail[128] = {};
    std::size_t rest = data.size() - full;
    for (std::size_t i = 0; i < rest; i++) tail[i] = bytes[full + i];
    tail[rest] = 0x80;
    std::size_t tail_len = rest < 56 ? 64 : 128;
    std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
    for (int i = 0; i < 8; i++) {
        tail[tail_len - 1 - i] = static_cast<std::uint8_t>(bits >> (i * 8));
    }
    for (std::size_t i = 0; i < tail_len; i += 64) compress(h, tail + i);

    std::array<std::uint8_t, 20> digest{};
    for (int i = 0; i < 20; i++) {
        digest[i] = static_cast<std::uint8_t>(h[i / 4] >> (24 - (i % 4) * 8));
    }
    return digest;
}

std::string sha1_hex(std::string_view data) {
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(40);
    for (std::uint8_t byte : sha1(data)) {
        hex.push_back(digits[byte >> 4]);
        hex.push_back(digits[byte & 0xf]);
    }
    return hex;
}

}  // namespace rrl
