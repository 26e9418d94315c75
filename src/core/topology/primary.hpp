// The primary behind Sentinel: each answer names a node (the engine's,
// opaque here); a node other than the one known is a switch: the first
// one known, or a failover, after which the old primary is out of use.
#pragma once

namespace rrl {

enum class PrimaryChange { same, first, switched };

class Primary {
   public:
    // nullptr: none known yet
    void* node() const { return node_; }

    // An answer names node: *old is the primary replaced (switched), else
    // nullptr.
    PrimaryChange name(void* node, void** old);

   private:
    void* node_ = nullptr;
};

}  // namespace rrl
