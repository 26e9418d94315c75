// The primary behind Sentinel: each answer names a node (the shim's,
// opaque here); a node other than the one known is a switch: the first
// one known, or a failover, after which the old primary is out of use.
#pragma once

#include "rrl_primary.h"

namespace rrl {

enum class PrimaryChange { same, first, switched };

// *old: the primary replaced (switched), else nullptr.
PrimaryChange primary_switch(rrl_primary_t* p, void* node, void** old);

}  // namespace rrl
