// The replies a Redis connection is owed. Each command sent is owed one
// top-level reply; an element of a reply is part of it. A reply no command
// awaits (a broken or hostile server: hiredis 0.14 would assert() on it)
// is caught as it is read, so the connection fails instead of the worker.
#pragma once

#include <cstdint>

namespace rrl {

struct ReplyCount {
    std::uint64_t sent = 0;     // commands sent on the connection
    std::uint64_t replies = 0;  // top-level replies read
    bool unsolicited = false;   // a reply came that no command awaits

    // a new connection: nothing sent, nothing read
    void reset() { *this = ReplyCount{}; }
    // a command was sent
    void command() { sent++; }
    // A reply, or an element of one (nested), is being read: false, and
    // unsolicited set, when no command awaits it: the connection must fail.
    bool read(bool nested);
};

}  // namespace rrl
