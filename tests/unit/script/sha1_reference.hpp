// A deliberately plain SHA-1 (FIPS 180-4 5.1.1 padding on a copy of the
// message, then 6.1.2), independent of src/core/sha1.cpp, used as the second
// opinion in the SHA-1 and key tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rrl_test {

inline std::string reference_sha1_hex(std::string_view message) {
    std::vector<std::uint8_t> m(message.begin(), message.end());
    const std::uint64_t bit_len = static_cast<std::uint64_t>(m.size()) * 8;
    m.push_back(0x80);
    while (m.size() % 64 != 56) m.push_back(0);
    for (int shift = 56; shift >= 0; shift -= 8) {
        m.push_back(static_cast<std::uint8_t>(bit_len >> shift));
    }

    auto rol = [](std::uint32_t v, unsigned n) {
        return static_cast<std::uint32_t>((v << n) | (v >> (32 - n)));
    };

    std::uint32_t H[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u,
                          0xC3D2E1F0u};
    for (std::size_t off = 0; off < m.size(); off += 64) {
        std::uint32_t W[80];
        for (int t = 0; t < 16; t++) {
            W[t] = 0;
            for (int b = 0; b < 4; b++) W[t] = (W[t] << 8) | m[off + 4 * t + b];
        }
        for (int t = 16; t < 80; t++) {
            W[t] = rol(W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16], 1);
        }
        std::uint32_t A = H[0], B = H[1], C = H[2], D = H[3], E = H[4];
        for (int t = 0; t < 80; t++) {
            std::uint32_t f, K;
            if (t <= 19) {
                f = (B & C) ^ (~B & D);
                K = 0x5A827999u;
            } else if (t <= 39) {
                f = B ^ C ^ D;
                K = 0x6ED9EBA1u;
            } else if (t <= 59) {
                f = (B & C) ^ (B & D) ^ (C & D);
                K = 0x8F1BBCDCu;
            } else {
                f = B ^ C ^ D;
                K = 0xCA62C1D6u;
            }
            std::uint32_t T = rol(A, 5) + f + E + W[t] + K;
            E = D;
            D = C;
            C = rol(B, 30);
            B = A;
            A = T;
        }
        H[0] += A;
        H[1] += B;
        H[2] += C;
        H[3] += D;
        H[4] += E;
    }

    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (std::uint32_t h : H) {
        for (int shift = 28; shift >= 0; shift -= 4) out.push_back(hex[(h >> shift) & 0xf]);
    }
    return out;
}

}  // namespace rrl_test
