// The Lua script run by EVALSHA, embedded at build time from lua/ (its
// SHA-1 for the shim: rrl_script_sha1() in rrl.h).
#pragma once

#include <string_view>

namespace rrl {

std::string_view script();

}  // namespace rrl
