// Error replies the module acts on: their kind (the first word: NOSCRIPT,
// and the cluster's and replication's MOVED, ASK, TRYAGAIN, CLUSTERDOWN,
// READONLY, MASTERDOWN, LOADING), and where a MOVED or ASK error sends the
// command ("MOVED 3999 127.0.0.1:6381").
#pragma once

#include <optional>
#include <string_view>

#include "topology/address.hpp"

namespace rrl {

// One of RRL_REPLY_*: the first word (up to the first space or the end),
// exactly, case-sensitive; RRL_REPLY_ERROR for any other.
int error_kind(std::string_view error);

struct Redirect {
    unsigned slot;
    Address target;
};

// "MOVED <slot> <host>:<port>" or "ASK ...", single spaces, nothing after
// the port; nullopt for anything else.
std::optional<Redirect> parse_redirect(std::string_view error);

}  // namespace rrl
