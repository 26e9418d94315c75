#include "topology/slot_map.hpp"

namespace rrl {

SlotMap::SlotMap() : slots_(RRL_CLUSTER_SLOTS, nullptr) {}

void* SlotMap::node(unsigned slot) const {
    return slot < slots_.size() ? slots_[slot] : nullptr;
}

bool SlotMap::serves(const void* node) const {
    return primaries_.count(node) > 0;
}

void SlotMap::set(unsigned slot, void* node) {
    if (slot < slots_.size()) slots_[slot] = node;
}

std::optional<SlotMap::Summary> SlotMap::replace(
    const std::vector<SlotRange>& ranges, void* const* nodes) {
    std::size_t n = ranges.size();
    for (std::size_t i = 0; i < n; i++) {
        if (ranges[i].start > ranges[i].end ||
            ranges[i].end >= RRL_CLUSTER_SLOTS) {
            return std::nullopt;
        }
    }
    std::vector<void*> slots(RRL_CLUSTER_SLOTS, nullptr);
    std::unordered_set<const void*> primaries;
    Summary summary{0, 0};
    for (std::size_t i = 0; i < n; i++) {
        if (nodes[i] == nullptr) continue;
        primaries.insert(nodes[i]);
        for (unsigned s = ranges[i].start; s <= ranges[i].end; s++) {
            slots[s] = nodes[i];
        }
        summary.covered += ranges[i].end - ranges[i].start + 1;
    }
    summary.primaries = primaries.size();
    slots_.swap(slots);
    primaries_.swap(primaries);
    return summary;
}

}  // namespace rrl
