// The setup of a new Redis connection, in the order it must go.
//
// To a Redis of limits, queued at once (written as soon as it is up):
// AUTH (with the username for a Redis 6 ACL), SELECT if a database is set,
// CLIENT SETNAME. SCRIPT LOAD follows only once CLIENT SETNAME succeeded,
// after the others: Redis 7 drops a connection not authenticated that
// sends an argument over 16 KB (the script may be that long), so a wrong
// password gives the clearer NOAUTH. The connection works once the script
// is loaded.
//
// To a Sentinel: AUTH with the Sentinel's password, if any; it works once
// it is up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rrl_handshake.h"

namespace rrl {

void handshake_init(rrl_handshake_t* hs, bool sentinel,
                    std::string_view username, std::string_view password,
                    std::uint64_t db);

std::size_t handshake_plan(const rrl_handshake_t& hs,
                           int steps[RRL_HANDSHAKE_MAX]);

int handshake_next(const rrl_handshake_t& hs, int step);

// The arguments of step's command (views into hs and the script).
std::size_t handshake_command(const rrl_handshake_t& hs, int step,
                              std::string_view args[RRL_HANDSHAKE_ARGS]);

const char* handshake_name(int step);

}  // namespace rrl
