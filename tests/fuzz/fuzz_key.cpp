// rrl_key_build into a buffer of exactly rrl_key_max_len() bytes followed by
// a guard region, and printable() within several sizes.
//
// Input: byte 0 picks the algorithm (some out of range) and how long a
// prefix of the rest is the zone name (used when valid, else "zone"); the
// rest is the client key. The whole input is also a client key of zone
// "api" (the algorithm from the input's length), and the string
// printable() escapes.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "script/key.hpp"
#include "api/rrl.h"

namespace {

constexpr std::size_t kGuard = 64;
constexpr unsigned char kFill = 0xa5;

const char* const kTags[RRL_ALGORITHM_COUNT] = {"fw", "sl", "sw", "tb", "lb"};

// A heap block of size bytes plus a guard region, all filled with kFill.
class Guarded {
public:
    explicit Guarded(std::size_t size)
        : size_(size), mem_(new unsigned char[size + kGuard]) {
        std::memset(mem_.get(), kFill, size + kGuard);
    }
    char* data() { return reinterpret_cast<char*>(mem_.get()); }
    // every byte from `from` on (the unused tail and the guard) untouched
    FUZZ_NO_COVERAGE bool untouched_from(std::size_t from) const {
        for (std::size_t i = from; i < size_ + kGuard; i++) {
            if (mem_[i] != kFill) return false;
        }
        return true;
    }

private:
    std::size_t size_;
    std::unique_ptr<unsigned char[]> mem_;
};

FUZZ_NO_COVERAGE bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

FUZZ_NO_COVERAGE void check_key(std::string_view zone, int algorithm,
                                std::string_view key) {
    // exact-length copies: ASan catches reads past them
    std::unique_ptr<char[]> z(new char[zone.size() + 1]);
    std::memcpy(z.get(), zone.data(), zone.size());
    std::unique_ptr<unsigned char[]> k(new unsigned char[key.size() + 1]);
    std::memcpy(k.get(), key.data(), key.size());

    std::size_t max = rrl_key_max_len(zone.size());
    Guarded buf(max);
    std::size_t len = rrl_key_build(buf.data(), z.get(), zone.size(),
                                    algorithm, k.get(), key.size());
    FUZZ_CHECK(len <= max);
    FUZZ_CHECK(buf.untouched_from(len));

    bool known = algorithm >= 0 && algorithm < RRL_ALGORITHM_COUNT;
    if (!known) {
        FUZZ_CHECK(len == 0);
        return;
    }
    FUZZ_CHECK(len > 0);
    std::string_view out(buf.data(), len);

    // "rrl:{" ZONE ":" (KEY | "#" SHA1-HEX) "}:" TAG
    std::string head = "rrl:{" + std::string(zone) + ":";
    std::string tail = std::string("}:") + kTags[algorithm];
    FUZZ_CHECK(out.substr(0, head.size()) == head);
    FUZZ_CHECK(out.size() >= head.size() + tail.size());
    FUZZ_CHECK(out.substr(out.size() - tail.size()) == tail);
    std::string_view middle = out.substr(
        head.size(), out.size() - head.size() - tail.size());
    bool hashed = key.size() > RRL_KEY_RAW_MAX ||
                  (!key.empty() && key[0] == '#');
    if (hashed) {
        FUZZ_CHECK(middle.size() == 41 && middle[0] == '#');
        for (char c : middle.substr(1)) FUZZ_CHECK(is_hex(c));
    } else {
        FUZZ_CHECK(middle == key);
    }

    // deterministic
    Guarded again(max);
    FUZZ_CHECK(rrl_key_build(again.data(), z.get(), zone.size(), algorithm,
                             k.get(), key.size()) == len);
    FUZZ_CHECK(std::memcmp(again.data(), buf.data(), len) == 0);
}

FUZZ_NO_COVERAGE int hex(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

std::size_t escaped_len(unsigned char c) {
    return (c < ' ' || c > '~' || c == '"' || c == '\\') ? 4 : 1;
}

// Undoes the escaping; false if out is not a valid escaped string.
FUZZ_NO_COVERAGE bool unescape(std::string_view out, std::string* bytes) {
    for (std::size_t i = 0; i < out.size(); i++) {
        char c = out[i];
        if (c == '"') return false;
        if (c != '\\') {
            bytes->push_back(c);
            continue;
        }
        if (i + 3 >= out.size()) return false;
        if (out[i + 1] != 'x' || !is_hex(out[i + 2]) || !is_hex(out[i + 3])) {
            return false;
        }
        bytes->push_back(static_cast<char>(hex(out[i + 2]) * 16 +
                                           hex(out[i + 3])));
        i += 3;
    }
    return true;
}

FUZZ_NO_COVERAGE void check_printable(std::string_view s, std::size_t size) {
    // below the dots, a cut text is the dots alone (key_test.cpp)
    if (size < 4) return;
    const std::string escaped = rrl::printable(s, size);
    std::size_t len = escaped.size();
    FUZZ_CHECK(len <= size);
    std::string_view out(escaped);
    for (char c : out) FUZZ_CHECK(c >= ' ' && c <= '~');

    std::size_t full = 0;
    for (unsigned char c : s) full += escaped_len(c);

    std::string bytes;
    if (full <= size) {
        // not cut: the whole string, escaped
        FUZZ_CHECK(len == full);
        FUZZ_CHECK(unescape(out, &bytes));
        FUZZ_CHECK(bytes == s);
        return;
    }
    // cut: the longest escaped prefix that leaves room for "..."
    FUZZ_CHECK(len >= 3 && out.substr(len - 3) == "...");
    std::string_view prefix = out.substr(0, len - 3);
    FUZZ_CHECK(unescape(prefix, &bytes));
    FUZZ_CHECK(bytes.size() < s.size());
    FUZZ_CHECK(s.substr(0, bytes.size()) == bytes);
    FUZZ_CHECK(prefix.size() + 3 <= size);
    FUZZ_CHECK(prefix.size() + escaped_len(static_cast<unsigned char>(
                                   s[bytes.size()])) + 3 > size);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    return fuzz::silence_core();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);

    // the whole input as a client key, of an algorithm or a bad one
    check_key("api", static_cast<int>(size % (RRL_ALGORITHM_COUNT + 2)) - 1,
              input);

    if (size > 0) {
        int algorithm = static_cast<int>(data[0] % (RRL_ALGORITHM_COUNT + 1));
        if (algorithm == RRL_ALGORITHM_COUNT) algorithm = -1 - (data[0] >> 7);
        std::string_view rest = input.substr(1);
        std::size_t zone_len = (data[0] >> 3) % 17;
        if (zone_len > rest.size()) zone_len = rest.size();
        std::string_view zone = rest.substr(0, zone_len);
        if (rrl::zone_name_valid(zone)) {
            check_key(zone, algorithm, rest.substr(zone_len));
        } else {
            check_key("zone", algorithm, rest);
        }
    }

    static const std::size_t sizes[] = {0, 1, 3, 4, 5, 6, 7, 8, 9, 16, 64,
                                        128, 256, 1024};
    for (std::size_t n : sizes) check_printable(input, n);
    if (size > 0) check_printable(input, data[0]);
    return 0;
}
