#include "script/slot.hpp"

#include <array>

#include "base/rrl_types.h"

namespace rrl {

namespace {

constexpr std::array<std::uint16_t, 256> make_crc16_table() {
    std::array<std::uint16_t, 256> table{};
    for (unsigned i = 0; i < table.size(); i++) {
        unsigned crc = i << 8;
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
        }
        table[i] = static_cast<std::uint16_t>(crc);
    }
    return table;
}

constexpr std::array<std::uint16_t, 256> crc16_table = make_crc16_table();

// A power of two: Redis takes the CRC's low 14 bits.
static_assert((RRL_CLUSTER_SLOTS & (RRL_CLUSTER_SLOTS - 1)) == 0);

}  // namespace

std::uint16_t crc16(std::string_view bytes) noexcept {
    unsigned crc = 0;
    for (unsigned char c : bytes) {
        crc = ((crc << 8) ^ crc16_table[((crc >> 8) ^ c) & 0xff]) & 0xffff;
    }
    return static_cast<std::uint16_t>(crc);
}

unsigned key_slot(std::string_view key) noexcept {
    std::size_t open = key.find('{');
    if (open != std::string_view::npos) {
        std::size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) {
            key = key.substr(open + 1, close - open - 1);
        }
    }
    return crc16(key) & (RRL_CLUSTER_SLOTS - 1);
}

}  // namespace rrl
