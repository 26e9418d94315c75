#include "topology/primary.hpp"

namespace rrl {

PrimaryChange Primary::name(void* node, void** old) {
    *old = nullptr;
    if (node == node_) return PrimaryChange::same;
    void* previous = node_;
    node_ = node;
    if (previous == nullptr) return PrimaryChange::first;
    *old = previous;
    return PrimaryChange::switched;
}

}  // namespace rrl
