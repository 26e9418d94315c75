// Redis keys of a limit's state:  rrl:{<zone>:<client key>}:<algorithm tag>
// The braces are a Redis Cluster hash tag, so every key of one zone and one
// client lands in one slot. Client keys longer than 128 bytes, or that could
// be mistaken for a hashed one, are replaced by "#" + their SHA-1 in hex.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "script/algorithm.hpp"

namespace rrl {

constexpr std::size_t key_raw_max = 128;

// Zone names become part of Redis keys: printable, no blanks, no braces,
// no ':'.
bool zone_name_valid(std::string_view zone);

std::size_t key_max_len(std::size_t zone_len);

std::string build_key(std::string_view zone, const Algorithm& algorithm,
                      std::string_view client_key);

// build_key() written into buf (key_max_len(zone.size()) bytes): its length.
std::size_t write_key(char* buf, std::string_view zone,
                      const Algorithm& algorithm, std::string_view client_key);

// Bytes outside printable ASCII, '"' and '\' become \xNN. A result longer
// than max_len (at least 3) is cut between characters and ends in "...".
std::string printable(std::string_view bytes, std::size_t max_len);

}  // namespace rrl
