/*
 * The C API of topology answers (topology_answer.hpp): what a reply to
 * CLUSTER SLOTS or to SENTINEL get-master-addr-by-name says, and why it is
 * of no use, as the shim logs it.
 */

#ifndef RRL_TOPOLOGY_ANSWER_H
#define RRL_TOPOLOGY_ANSWER_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* room for any reason written into why */
#define RRL_ANSWER_WHY_MAX  (RRL_HOST_MAX + 300)

/*
 * CLUSTER SLOTS's reply (NULL: none came), as rrl_cluster_slots_parse()
 * reads it. RRL_ERROR with the reason in why (NUL-terminated, at least
 * RRL_ANSWER_WHY_MAX bytes), to be logged after "CLUSTER SLOTS on HOST ":
 * "failed: no reply", "failed: " and an error reply's text (escaped, as
 * rrl_printable() does), "failed: not an array"; "" when the core has
 * logged what was malformed.
 */
int rrl_cluster_slots_answer(const rrl_value_t *reply,
    rrl_slot_range_t *ranges, size_t max, size_t *n, char *why) RRL_NOEXCEPT;

/*
 * A sentinel's reply for the primary of name (NULL: none came), as
 * rrl_sentinel_addr_parse() reads it. RRL_ERROR with the reason in why,
 * to be logged after "sentinel HOST ": "failed: ..." as above, "does not
 * know \"NAME\"", or "" when the core has logged what was malformed.
 */
int rrl_sentinel_answer(const rrl_value_t *reply, const char *name,
    size_t name_len, char *host, unsigned *port, char *why) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_TOPOLOGY_ANSWER_H */
