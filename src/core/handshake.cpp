#include "handshake.hpp"

#include <charconv>

namespace rrl {

void handshake_init(rrl_handshake_t* hs, bool sentinel,
                    std::string_view username, std::string_view password,
                    std::uint64_t db) {
    *hs = rrl_handshake_t{};
    hs->sentinel = sentinel ? 1 : 0;
    if (!sentinel) {
        hs->username = username.data();
        hs->username_len = username.size();
        // 20 digits at most: always fits, NUL-terminated by the zeroing
        if (db != 0) std::to_chars(hs->db, hs->db + sizeof(hs->db) - 1, db);
    }
    hs->password = password.data();
    hs->password_len = password.size();
}

std::size_t handshake_plan(const rrl_handshake_t& hs,
                           int steps[RRL_HANDSHAKE_MAX]) {
    std::size_t n = 0;
    if (hs.username_len != 0) {
        steps[n++] = RRL_HANDSHAKE_AUTH_USER;
    } else if (hs.password_len != 0) {
        steps[n++] = RRL_HANDSHAKE_AUTH;
    }
    if (hs.sentinel) return n;
    if (hs.db[0] != '\0') steps[n++] = RRL_HANDSHAKE_SELECT;
    steps[n++] = RRL_HANDSHAKE_SETNAME;
    return n;
}

int handshake_next(const rrl_handshake_t& hs, int step) {
    switch (step) {
        case RRL_HANDSHAKE_CONNECTED:
            return hs.sentinel ? RRL_HANDSHAKE_READY : RRL_HANDSHAKE_NONE;
        case RRL_HANDSHAKE_SETNAME:
            return RRL_HANDSHAKE_SCRIPT_LOAD;
        case RRL_HANDSHAKE_SCRIPT_LOAD:
            return RRL_HANDSHAKE_READY;
        default:
            return RRL_HANDSHAKE_NONE;
    }
}

std::size_t handshake_command(const rrl_handshake_t& hs, int step,
                              std::string_view args[RRL_HANDSHAKE_ARGS]) {
    std::string_view password(hs.password, hs.password_len);
    std::size_t len = 0;
    const char* script = nullptr;
    switch (step) {
        case RRL_HANDSHAKE_AUTH:
            args[0] = "AUTH";
            args[1] = password;
            return 2;
        case RRL_HANDSHAKE_AUTH_USER:
            args[0] = "AUTH";
            args[1] = std::string_view(hs.username, hs.username_len);
            args[2] = password;
            return 3;
        case RRL_HANDSHAKE_SELECT:
            args[0] = "SELECT";
            args[1] = hs.db;
            return 2;
        case RRL_HANDSHAKE_SETNAME:
            args[0] = "CLIENT";
            args[1] = "SETNAME";
            args[2] = "nginx-redis-ratelimit";
            return 3;
        case RRL_HANDSHAKE_SCRIPT_LOAD:
            args[0] = "SCRIPT";
            args[1] = "LOAD";
            script = rrl_script(&len);
            args[2] = std::string_view(script, len);
            return 3;
        default:
            return 0;
    }
}

const char* handshake_name(int step) {
    switch (step) {
        case RRL_HANDSHAKE_AUTH:
        case RRL_HANDSHAKE_AUTH_USER:
            return "AUTH";
        case RRL_HANDSHAKE_SELECT:
            return "SELECT";
        case RRL_HANDSHAKE_SETNAME:
            return "CLIENT SETNAME";
        case RRL_HANDSHAKE_SCRIPT_LOAD:
            return "SCRIPT LOAD";
        default:
            return "";
    }
}

}  // namespace rrl
