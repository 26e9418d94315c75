// The embedded Lua script (generated from lua/ at build time) and its
// SHA-1, computed once, for EVALSHA.
#include "script/script.hpp"

#include <string>
#include <string_view>

#include "base/rrl_types.h"
#include "rrl_script.h"
#include "script/sha1.hpp"

namespace {

constexpr std::string_view script_text(rrl_script_text,
                                       sizeof(rrl_script_text) - 1);

const std::string& script_sha1() {
    static const std::string digest = rrl::sha1_hex(script_text);
    return digest;
}

}  // namespace

std::string_view rrl::script() {
    return script_text;
}

extern "C" const char* rrl_script_sha1(void) noexcept {
    try {
        return script_sha1().c_str();
    } catch (...) {
        return nullptr;
    }
}
