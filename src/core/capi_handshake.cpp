// The extern "C" face of a connection's setup (rrl_handshake.h).
#include <string_view>

#include "handshake.hpp"
#include "rrl_handshake.h"

void rrl_handshake_init(rrl_handshake_t* hs, int sentinel, const char* username,
                        size_t username_len, const char* password,
                        size_t password_len, uint64_t db) noexcept {
    rrl::handshake_init(
        hs, sentinel != 0,
        std::string_view(username_len ? username : "", username_len),
        std::string_view(password_len ? password : "", password_len), db);
}

size_t rrl_handshake_plan(const rrl_handshake_t* hs,
                          int steps[RRL_HANDSHAKE_MAX]) noexcept {
    return rrl::handshake_plan(*hs, steps);
}

int rrl_handshake_next(const rrl_handshake_t* hs, int step) noexcept {
    return rrl::handshake_next(*hs, step);
}

size_t rrl_handshake_command(const rrl_handshake_t* hs, int step,
                             const char* argv[RRL_HANDSHAKE_ARGS],
                             size_t argvlen[RRL_HANDSHAKE_ARGS]) noexcept {
    std::string_view args[RRL_HANDSHAKE_ARGS];
    size_t n = rrl::handshake_command(*hs, step, args);
    for (size_t i = 0; i < n; i++) {
        argv[i] = args[i].data();
        argvlen[i] = args[i].size();
    }
    return n;
}

const char* rrl_handshake_name(int step) noexcept {
    return rrl::handshake_name(step);
}
