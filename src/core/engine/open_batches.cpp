#include "engine/open_batches.hpp"

#include <algorithm>
#include <stdexcept>

namespace rrl {

std::pair<Batch*, bool> OpenBatches::get(void* node, unsigned slot) {
    for (const auto& b : open_) {
        if (b->node() == node && b->slot() == slot) return {b.get(), false};
    }

    open_.push_back(std::make_unique<Batch>(node, slot));
    return {open_.back().get(), true};
}

Batch* OpenBatches::pop() {
    if (open_.empty()) return nullptr;

    Batch* b = open_.front().release();
    open_.pop_front();
    return b;
}

void OpenBatches::take(Batch* batch) {
    auto it = std::find_if(open_.begin(), open_.end(),
                           [&](const auto& b) { return b.get() == batch; });
    if (it == open_.end()) throw std::invalid_argument("not an open batch");

    it->release();
    open_.erase(it);
}

}  // namespace rrl
