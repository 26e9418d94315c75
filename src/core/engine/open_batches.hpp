// The batches open in a turn of the event loop, one a node and slot, in the
// order they were opened: each part joins its node's and slot's, and all are
// sent when the turn ends (or one at once when full).
#pragma once

#include <list>
#include <memory>
#include <utility>

#include "engine/batch.hpp"

namespace rrl {

class OpenBatches {
  public:
    // The open batch of node and slot, or a new one; second: it is new.
    std::pair<Batch*, bool> get(void* node, unsigned slot);

    // The first open batch, no more open (the caller's now), or nullptr.
    Batch* pop();

    // The batch, no more open (the caller's now).
    void take(Batch* batch);

  private:
    std::list<std::unique_ptr<Batch>> open_;
};

}  // namespace rrl
