/*
 * The C API of the primary (primary.hpp): which node the sentinels name as
 * the primary, nodes being opaque pointers of the shim.
 */

#ifndef RRL_PRIMARY_H
#define RRL_PRIMARY_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void  *node;    /* NULL: none known yet */
} rrl_primary_t;

/* what an answer naming node changed */
#define RRL_PRIMARY_SAME      0   /* it still is */
#define RRL_PRIMARY_FIRST     1   /* the first one known */
#define RRL_PRIMARY_SWITCHED  2   /* a failover: *old is out of use */

int rrl_primary_switch(rrl_primary_t *p, void *node, void **old)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_PRIMARY_H */
