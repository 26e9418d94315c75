/*
 * The C API of a request's script call: its parts (one a Cluster slot),
 * the batches that carry them, their replies merged into the request's,
 * the release form, and what a reply leads to. See call_plan.hpp,
 * batch.hpp and retry.hpp.
 */

#ifndef RRL_CALL_H
#define RRL_CALL_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrl_call_plan_s  rrl_call_plan_t;
typedef struct rrl_batch_s      rrl_batch_t;

/*
 * argv as the handler builds it, zones[j] naming limit j's zone (n of
 * them); one part in all, or one a slot when cluster. NULL: an error.
 */
rrl_call_plan_t *rrl_call_plan_new(int argc, const char **argv,
    const size_t *argvlen, const void *const *zones, size_t n, int cluster)
    RRL_NOEXCEPT;
void rrl_call_plan_free(rrl_call_plan_t *plan) RRL_NOEXCEPT;
size_t rrl_call_plan_parts(const rrl_call_plan_t *plan) RRL_NOEXCEPT;
unsigned rrl_call_plan_slot(const rrl_call_plan_t *plan, size_t part)
    RRL_NOEXCEPT;
/* the integers of the part's reply */
size_t rrl_call_plan_values(const rrl_call_plan_t *plan, size_t part)
    RRL_NOEXCEPT;
/* where to write the part's reply: the part is answered; NULL: no part */
int64_t *rrl_call_plan_reply(rrl_call_plan_t *plan, size_t part)
    RRL_NOEXCEPT;
/* the request's reply, in its limits' order: its length; 0: a part failed */
size_t rrl_call_plan_merge(const rrl_call_plan_t *plan, int64_t *out,
    size_t cap) RRL_NOEXCEPT;
/*
 * The part's release form in RESP, when it passed and the request did not
 * (as snprintf: the whole length, written if it fits); 0: none.
 */
size_t rrl_call_plan_release(const rrl_call_plan_t *plan, size_t part,
    char *buf, size_t size) RRL_NOEXCEPT;


rrl_batch_t *rrl_batch_new(void) RRL_NOEXCEPT;
void rrl_batch_free(rrl_batch_t *batch) RRL_NOEXCEPT;
/* RRL_OK, 1: full, to be sent now, or RRL_ERROR; plan lives till built */
int rrl_batch_add(rrl_batch_t *batch, const rrl_call_plan_t *plan,
    size_t part, void *data) RRL_NOEXCEPT;
/* leaves out entry i, before the command is built */
void rrl_batch_remove(rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
size_t rrl_batch_size(const rrl_batch_t *batch) RRL_NOEXCEPT;
void *rrl_batch_data(const rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
/* the integers of the reply; where entry i's share starts */
size_t rrl_batch_values(const rrl_batch_t *batch) RRL_NOEXCEPT;
size_t rrl_batch_share(const rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
/* the EVALSHA in RESP, built once, kept with the batch; NULL: an error */
const char *rrl_batch_command(rrl_batch_t *batch, const char *sha,
    size_t sha_len, size_t *len) RRL_NOEXCEPT;


/* a batch's reply of kind RRL_REPLY_* (RRL_REPLY_ERROR: not an error) */
#define RRL_RETRY_ANSWER       0
#define RRL_RETRY_LOAD_SCRIPT  1   /* SCRIPT LOAD, send again */
#define RRL_RETRY_REDIRECT     2   /* send again, to the node named */

int rrl_retry_action(int kind, int reloaded, int redirected) RRL_NOEXCEPT;
/* for the circuit breaker: Redis answered */
int rrl_retry_counts_ok(int replied, int array, int kind) RRL_NOEXCEPT;

#define RRL_RETRY_ASK_NOBODY    0
#define RRL_RETRY_ASK_SENTINEL  1
#define RRL_RETRY_ASK_CLUSTER   2

int rrl_retry_ask(int kind) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CALL_H */
