// The Redis Cluster slot of a key, as Redis' keyHashSlot() computes it:
// CRC16 of the key, or of its hash tag, mod 16384. A call (call_plan.hpp) is
// split by it, so that each part goes straight to the node that serves its
// keys.
#pragma once

#include <cstdint>
#include <string_view>

namespace rrl {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis'
// crc16.c; "123456789" gives 0x31C3.
std::uint16_t crc16(std::string_view bytes) noexcept;

// The hash tag is what lies between the first '{' and the first '}' after
// it, when that is not empty; otherwise the whole key is hashed.
unsigned key_slot(std::string_view key) noexcept;

}  // namespace rrl
