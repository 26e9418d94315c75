// The node serving each Redis Cluster slot: built from the ranges of
// CLUSTER SLOTS, each with the node the engine found for its primary (none:
// left out, e.g. a primary named by a host name), changed slot by slot by
// MOVED. Nodes are the engine's, opaque here.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_set>
#include <vector>

#include "topology/topology_replies.hpp"

namespace rrl {

class SlotMap {
   public:
    SlotMap();

    void* node(unsigned slot) const;
    // a primary of the last replace(), whatever MOVED changed since
    bool serves(const void* node) const;
    void set(unsigned slot, void* node);

    struct Summary {
        std::size_t covered;    // slots served
        std::size_t primaries;  // distinct nodes
    };

    // The map from CLUSTER SLOTS: the slots of ranges[i] to nodes[i]
    // (nullptr: left out), every other slot to none. nullopt (the map
    // unchanged) when a range is out of the slots.
    std::optional<Summary> replace(const std::vector<SlotRange>& ranges,
                                   void* const* nodes);

   private:
    std::vector<void*> slots_;
    std::unordered_set<const void*> primaries_;
};

}  // namespace rrl
