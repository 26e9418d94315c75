// The slot map's extern "C" functions (rrl_slot_map.h); none can throw.
#include <new>

#include "capi.hpp"
#include "rrl_slot_map.h"
#include "slot_map.hpp"

struct rrl_slot_map_s {
    rrl::SlotMap map;
};

rrl_slot_map_t* rrl_slot_map_create(void) noexcept {
    return rrl::capi::guarded("rrl_slot_map_create",
                              static_cast<rrl_slot_map_t*>(nullptr),
                              [] { return new rrl_slot_map_t(); });
}

void rrl_slot_map_destroy(rrl_slot_map_t* map) noexcept {
    delete map;
}

void* rrl_slot_map_node(const rrl_slot_map_t* map, unsigned slot) noexcept {
    return map->map.node(slot);
}

int rrl_slot_map_serves(const rrl_slot_map_t* map, const void* node) noexcept {
    return map->map.serves(node) ? 1 : 0;
}

void rrl_slot_map_set(rrl_slot_map_t* map, unsigned slot, void* node) noexcept {
    map->map.set(slot, node);
}

int rrl_slot_map_replace(rrl_slot_map_t* map, const rrl_slot_range_t* ranges,
                         void* const* nodes, size_t n, size_t* covered,
                         size_t* primaries) noexcept {
    return rrl::capi::guarded("rrl_slot_map_replace", RRL_ERROR, [&] {
        auto summary = map->map.replace(ranges, nodes, n);
        if (!summary) return RRL_ERROR;
        *covered = summary->covered;
        *primaries = summary->primaries;
        return RRL_OK;
    });
}
