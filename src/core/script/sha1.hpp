// SHA-1 (FIPS 180-4): the script's EVALSHA digest and the short form of
// long client keys. Not used for anything that needs collision resistance
// against a chosen-prefix attacker with a GPU farm.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace rrl {

std::array<std::uint8_t, 20> sha1(std::string_view data);
std::string sha1_hex(std::string_view data);

}  // namespace rrl
