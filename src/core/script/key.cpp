#include "script/key.hpp"

#include <cstring>

#include "base/rrl_types.h"
#include "script/sha1.hpp"

namespace rrl {

namespace {

constexpr std::string_view prefix = "rrl:{";
constexpr std::size_t tag_max = 2;

static_assert(key_raw_max == RRL_KEY_RAW_MAX);

}  // namespace

bool zone_name_valid(std::string_view zone) {
    if (zone.empty()) return false;
    for (char c : zone) {
        // ':' separates the zone from the client key: "a:b" + "c" must not
        // share a key with "a" + "b:c"
        if (c <= ' ' || c > '~' || c == '{' || c == '}' || c == ':') {
            return false;
        }
    }
    return true;
}

std::size_t key_max_len(std::size_t zone_len) {
    return prefix.size() + zone_len + 1 + key_raw_max + 2 + tag_max;
}

std::size_t write_key(char* buf, std::string_view zone,
                      const Algorithm& algorithm, std::string_view client_key) {
    char* p = buf;
    auto put = [&p](std::string_view s) {
        if (s.empty()) return;  // no memcpy from a null view's data
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    };

    put(prefix);
    put(zone);
    put(":");

    if (client_key.size() > key_raw_max ||
        (!client_key.empty() && client_key[0] == '#')) {
        put("#");
        put(sha1_hex(client_key));
    } else {
        put(client_key);
    }

    put("}:");
    put(algorithm.key_tag);
    return static_cast<std::size_t>(p - buf);
}

std::string build_key(std::string_view zone, const Algorithm& algorithm,
                      std::string_view client_key) {
    std::string key(key_max_len(zone.size()), '\0');
    key.resize(write_key(key.data(), zone, algorithm, client_key));
    return key;
}

std::string printable(std::string_view bytes, std::size_t max_len) {
    static const char digits[] = "0123456789abcdef";
    constexpr std::string_view ellipsis = "...";

    std::string out;
    std::size_t cut = std::string::npos;  // where "..." goes if needed

    for (unsigned char c : bytes) {
        char piece[4] = {static_cast<char>(c)};
        std::size_t n = 1;
        if (c < ' ' || c > '~' || c == '"' || c == '\\') {
            piece[0] = '\\';
            piece[1] = 'x';
            piece[2] = digits[c >> 4];
            piece[3] = digits[c & 0xf];
            n = 4;
        }

        if (cut == std::string::npos &&
            out.size() + n + ellipsis.size() > max_len) {
            cut = out.size();
        }
        if (out.size() + n > max_len) {
            out.resize(cut);
            out.append(ellipsis);
            break;
        }
        out.append(piece, n);
    }

    return out;
}

}  // namespace rrl
