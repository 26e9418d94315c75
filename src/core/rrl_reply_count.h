/*
 * The replies a Redis connection is owed (see reply_count.hpp): commands
 * sent against top-level replies read, to catch a reply no command awaits.
 */

#ifndef RRL_REPLY_COUNT_H
#define RRL_REPLY_COUNT_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t  sent;          /* commands sent on the connection */
    uint64_t  replies;       /* top-level replies read */
    int       unsolicited;   /* a reply came that no command awaits */
} rrl_reply_count_t;

/* a new connection: nothing sent, nothing read */
void rrl_reply_count_init(rrl_reply_count_t *rc) RRL_NOEXCEPT;

/* a command was sent */
void rrl_reply_count_sent(rrl_reply_count_t *rc) RRL_NOEXCEPT;

/*
 * A reply, or an element of one (nested != 0), is being read: 1 if a
 * command awaits it, 0 (and unsolicited set) if none does: the connection
 * must fail then.
 */
int rrl_reply_count_read(rrl_reply_count_t *rc, int nested) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_REPLY_COUNT_H */
