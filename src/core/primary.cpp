#include "primary.hpp"

namespace rrl {

PrimaryChange primary_switch(rrl_primary_t* p, void* node, void** old) {
    *old = nullptr;
    if (node == p->node) return PrimaryChange::same;
    void* previous = p->node;
    p->node = node;
    if (previous == nullptr) return PrimaryChange::first;
    *old = previous;
    return PrimaryChange::switched;
}

}  // namespace rrl
