// The setup of a new Redis connection, in the order it must go.
//
// To a Redis of limits, queued at once (written as soon as it is up):
// AUTH (with the username for a Redis 6 ACL), SELECT if a database is set,
// CLIENT SETNAME. SCRIPT LOAD follows only once CLIENT SETNAME succeeded,
// after the others: Redis 7 drops a connection not authenticated that
// sends an argument over 16 KB (the script may be that long), so a wrong
// password gives the clearer NOAUTH. Requests go out as soon as the
// connection is up: on a Redis that never had the script, one written
// before SCRIPT LOAD gets NOSCRIPT, and is sent again after a SCRIPT LOAD
// of its own (counted as a noscript error).
//
// To a Sentinel: AUTH with the Sentinel's password, if any; it works once
// it is up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rrl {

// the steps: events, and commands to send
enum HandshakeStep : int {
    kHandshakeNone = 0,    // nothing follows
    kHandshakeConnected,   // the connection is up
    kHandshakeAuth,        // AUTH password
    kHandshakeAuthUser,    // AUTH username password (ACL)
    kHandshakeSelect,      // SELECT db
    kHandshakeSetname,     // CLIENT SETNAME
    kHandshakeScriptLoad,  // SCRIPT LOAD the script
    kHandshakeReady,       // the connection works
};

constexpr std::size_t kHandshakeMax = 3;  // commands queued on connect, at most
constexpr std::size_t kHandshakeArgs = 3;  // arguments of a command, at most

// what a connection is set up with: to a Redis of limits or a Sentinel
struct Handshake {
    bool sentinel = false;
    std::string_view username;  // empty: none; not a Sentinel's
    std::string_view password;  // a Sentinel's own for a Sentinel
    char db[24] = {};           // "" or the database's number
};

// the strings are the caller's, kept while hs is used
void handshake_init(Handshake* hs, bool sentinel, std::string_view username,
                    std::string_view password, std::uint64_t db);

// the commands queued at once on connect, in order: returns how many
std::size_t handshake_plan(const Handshake& hs, int steps[kHandshakeMax]);

// What follows step's success (or kHandshakeConnected): a command to send,
// kHandshakeReady or kHandshakeNone.
int handshake_next(const Handshake& hs, int step);

// The arguments of step's command (views into hs and the script): how
// many, 0 for a step that is no command.
std::size_t handshake_command(const Handshake& hs, int step,
                              std::string_view args[kHandshakeArgs]);

// a step's command, for logs: "AUTH", "SELECT", ...; "" for an event
const char* handshake_name(int step);

}  // namespace rrl
