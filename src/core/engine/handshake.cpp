#include "engine/handshake.hpp"

#include <charconv>

#include "script/script.hpp"

namespace rrl {

void handshake_init(Handshake* hs, bool sentinel, std::string_view username,
                    std::string_view password, std::uint64_t db) {
    *hs = Handshake{};
    hs->sentinel = sentinel;
    if (!sentinel) {
        hs->username = username;
        // 20 digits at most: always fits, NUL-terminated by the zeroing
        if (db != 0) std::to_chars(hs->db, hs->db + sizeof(hs->db) - 1, db);
    }
    hs->password = password;
}

std::size_t handshake_plan(const Handshake& hs, int steps[kHandshakeMax]) {
    std::size_t n = 0;
    if (!hs.username.empty()) {
        steps[n++] = kHandshakeAuthUser;
    } else if (!hs.password.empty()) {
        steps[n++] = kHandshakeAuth;
    }
    if (hs.sentinel) return n;
    if (hs.db[0] != '\0') steps[n++] = kHandshakeSelect;
    steps[n++] = kHandshakeSetname;
    return n;
}

int handshake_next(const Handshake& hs, int step) {
    switch (step) {
        case kHandshakeConnected:
            return hs.sentinel ? kHandshakeReady : kHandshakeNone;
        case kHandshakeSetname:
            return kHandshakeScriptLoad;
        case kHandshakeScriptLoad:
            return kHandshakeReady;
        default:
            return kHandshakeNone;
    }
}

std::size_t handshake_command(const Handshake& hs, int step,
                              std::string_view args[kHandshakeArgs]) {
    switch (step) {
        case kHandshakeAuth:
            args[0] = "AUTH";
            args[1] = hs.password;
            return 2;
        case kHandshakeAuthUser:
            args[0] = "AUTH";
            args[1] = hs.username;
            args[2] = hs.password;
            return 3;
        case kHandshakeSelect:
            args[0] = "SELECT";
            args[1] = hs.db;
            return 2;
        case kHandshakeSetname:
            args[0] = "CLIENT";
            args[1] = "SETNAME";
            args[2] = "nginx-redis-ratelimit";
            return 3;
        case kHandshakeScriptLoad:
            args[0] = "SCRIPT";
            args[1] = "LOAD";
            args[2] = script();
            return 3;
        default:
            return 0;
    }
}

const char* handshake_name(int step) {
    switch (step) {
        case kHandshakeAuth:
        case kHandshakeAuthUser:
            return "AUTH";
        case kHandshakeSelect:
            return "SELECT";
        case kHandshakeSetname:
            return "CLIENT SETNAME";
        case kHandshakeScriptLoad:
            return "SCRIPT LOAD";
        default:
            return "";
    }
}

}  // namespace rrl
