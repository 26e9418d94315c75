#include "key.hpp"

#include "rrl.h"
#include "sha1.hpp"

namespace rrl {

namespace {

constexpr std::string_view prefix = "rrl:{";
constexpr std::size_t hashed_len = 1 + 40;  // "#" + hex SHA-1
constexpr std::size_t tag_max = 2;

static_assert(key_raw_max == RRL_KEY_RAW_MAX);

}  // namespace

bool zone_name_valid(std::string_view zone) {
    if (zone.empty()) return false;
    for (char c : zone) {
        if (c <= ' ' || c > '~' || c == '{' || c == '}') return false;
    }
    return true;
}

std::size_t key_max_len(std::size_t zone_len) {
    return prefix.size() + zone_len + 1 + key_raw_max + 2 + tag_max;
}

std::string build_key(std::string_view zone, const Algorithm& algorithm,
                      std::string_view client_key) {
    std::string key;
    key.reserve(key_max_len(zone.size()));
    key.append(prefix).append(zone).push_back(':');

    if (client_key.size() > key_raw_max ||
        (!client_key.empty() && client_key[0] == '#')) {
        key.push_back('#');
        key.append(sha1_hex(client_key));
    } else {
        key.append(client_key);
    }

    key.append("}:").append(algorithm.key_tag);
    return key;
}

std::string printable(std::string_view bytes, std::size_t max_len) {
    static const char digits[] = "0123456789abcdef";
    std::string out;

    for (unsigned char c : bytes) {
        std::size_t need = (c < ' ' || c > '~' || c == '"' || c == '\\') ? 4 : 1;
        if (out.size() + need > max_len) {
            out.append("...");
            break;
        }
        if (need == 4) {
            out.append("\\x");
            out.push_back(digits[c >> 4]);
            out.push_back(digits[c & 0xf]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }

    return out;
}

}  // namespace rrl
