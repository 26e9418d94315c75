/*
 * The C API of the slot map (slot_map.hpp): the node serving each Redis
 * Cluster slot, nodes being opaque pointers of the shim.
 */

#ifndef RRL_SLOT_MAP_H
#define RRL_SLOT_MAP_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrl_slot_map_s  rrl_slot_map_t;

/* an empty map (no slot served); NULL: no memory */
rrl_slot_map_t *rrl_slot_map_create(void) RRL_NOEXCEPT;
void rrl_slot_map_destroy(rrl_slot_map_t *map) RRL_NOEXCEPT;
/* the node of slot; NULL: none known, or no such slot */
void *rrl_slot_map_node(const rrl_slot_map_t *map, unsigned slot)
    RRL_NOEXCEPT;
/* 1: node serves slots in the map CLUSTER SLOTS gave last */
int rrl_slot_map_serves(const rrl_slot_map_t *map, const void *node)
    RRL_NOEXCEPT;
/* slot is served by node now (MOVED) */
void rrl_slot_map_set(rrl_slot_map_t *map, unsigned slot, void *node)
    RRL_NOEXCEPT;
/*
 * The map from CLUSTER SLOTS: the slots of ranges[i] to nodes[i] (NULL:
 * left out), every other slot to none; *covered: the slots served,
 * *primaries: the distinct nodes. RRL_ERROR (map unchanged): a range out
 * of the slots, or no memory.
 */
int rrl_slot_map_replace(rrl_slot_map_t *map, const rrl_slot_range_t *ranges,
    void *const *nodes, size_t n, size_t *covered, size_t *primaries)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_SLOT_MAP_H */
