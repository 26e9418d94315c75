/*
 * The C API of a request's script call (call.hpp): its parts (one a
 * Cluster slot), each part's way to Redis and its breaker's probe, the
 * replies merged into the request's, the release form; the batches that
 * carry parts (batch.hpp); what a batch's reply leads to (retry.hpp).
 */

#ifndef RRL_CALL_H
#define RRL_CALL_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrl_call_s   rrl_call_t;
typedef struct rrl_batch_s  rrl_batch_t;
typedef struct rrl_batches_s  rrl_batches_t;

/*
 * argv as the handler builds it, zones[j] naming limit j's zone (n of
 * them); one part in all, or one a slot when cluster. NULL: an error.
 */
rrl_call_t *rrl_call_new(int argc, const char **argv, const size_t *argvlen,
    const void *const *zones, size_t n, int cluster) RRL_NOEXCEPT;
void rrl_call_free(rrl_call_t *call) RRL_NOEXCEPT;
/* the caller's call the parts are of; NULL until set */
void rrl_call_set_data(rrl_call_t *call, void *data) RRL_NOEXCEPT;
void *rrl_call_data(const rrl_call_t *call) RRL_NOEXCEPT;
size_t rrl_call_parts(const rrl_call_t *call) RRL_NOEXCEPT;
unsigned rrl_call_slot(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;

/* the part's node (the caller's); 1: the first part on it, that asks */
void rrl_call_set_node(rrl_call_t *call, size_t part, void *node)
    RRL_NOEXCEPT;
void *rrl_call_node(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;
int rrl_call_asks(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/* the node's breaker granted its probe to the part */
void rrl_call_set_probe(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
int rrl_call_probe(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;

/* out of its batch: 1 if its reply is still awaited */
int rrl_call_out(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
int rrl_call_awaited(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/* parts in batches */
size_t rrl_call_in_batches(const rrl_call_t *call) RRL_NOEXCEPT;
/* answered: the parts still awaited */
size_t rrl_call_answer(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
size_t rrl_call_pending(const rrl_call_t *call) RRL_NOEXCEPT;
/* not sent: 1 when its probe is to be abandoned */
int rrl_call_unsent(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/*
 * The timeout: every part answered; the first that was not (or parts()).
 * Then 1 from fails() for a part not counted yet that asks its node.
 */
size_t rrl_call_time_out(rrl_call_t *call) RRL_NOEXCEPT;
int rrl_call_fails(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/* the request is gone; 1: a probe is out that its breaker has not seen */
void rrl_call_detach(rrl_call_t *call) RRL_NOEXCEPT;
int rrl_call_probe_out(const rrl_call_t *call) RRL_NOEXCEPT;
/* 1: the part's probe, out, is a failure now (once) */
int rrl_call_probe_lost(rrl_call_t *call, size_t part) RRL_NOEXCEPT;

/* the integers of the part's reply */
size_t rrl_call_values(const rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/* where to write the part's reply; NULL: no such part */
int64_t *rrl_call_reply(rrl_call_t *call, size_t part) RRL_NOEXCEPT;
/* the request's reply, in its limits' order: its length; 0: a part failed */
size_t rrl_call_merge(const rrl_call_t *call, int64_t *out, size_t cap)
    RRL_NOEXCEPT;
/*
 * The part's release form in RESP, when it passed and the request did not
 * (as snprintf: the whole length, written if it fits); 0: none.
 */
size_t rrl_call_release(const rrl_call_t *call, size_t part, char *buf,
    size_t size) RRL_NOEXCEPT;


rrl_batch_t *rrl_batch_new(void) RRL_NOEXCEPT;
void rrl_batch_free(rrl_batch_t *batch) RRL_NOEXCEPT;
/* RRL_OK, 1: full, to be sent now, or RRL_ERROR; the call's part enters */
int rrl_batch_add(rrl_batch_t *batch, rrl_call_t *call, size_t part,
    void *data) RRL_NOEXCEPT;
/* leaves out entry i, before the command is built */
void rrl_batch_remove(rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
size_t rrl_batch_size(const rrl_batch_t *batch) RRL_NOEXCEPT;
/* entry i: the caller's data, the part of its call */
void *rrl_batch_data(const rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
size_t rrl_batch_part(const rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
/* the integers of the reply; where entry i's share starts */
size_t rrl_batch_values(const rrl_batch_t *batch) RRL_NOEXCEPT;
size_t rrl_batch_share(const rrl_batch_t *batch, size_t i) RRL_NOEXCEPT;
/* the EVALSHA in RESP, built once, kept with the batch; NULL: an error */
const char *rrl_batch_command(rrl_batch_t *batch, const char *sha,
    size_t sha_len, size_t *len) RRL_NOEXCEPT;
/* 1: the breaker is to see the batch's outcome (once); its parts counted */
int rrl_batch_count(rrl_batch_t *batch) RRL_NOEXCEPT;
/* sent again to node */
void rrl_batch_resent(rrl_batch_t *batch, void *node) RRL_NOEXCEPT;
/* its node (the caller's, opaque) and slot; when it was sent */
void *rrl_batch_node(const rrl_batch_t *batch) RRL_NOEXCEPT;
unsigned rrl_batch_slot(const rrl_batch_t *batch) RRL_NOEXCEPT;
int64_t rrl_batch_sent(const rrl_batch_t *batch) RRL_NOEXCEPT;
void rrl_batch_set_sent(rrl_batch_t *batch, int64_t sent) RRL_NOEXCEPT;
/* what its reply of kind leads to: RRL_RETRY_*, each retry once */
int rrl_batch_retry(rrl_batch_t *batch, int kind) RRL_NOEXCEPT;

/*
 * The batches open in a turn, in order: the one of node and slot (*created:
 * a new one; NULL: no memory); the first, or a full one, taken out to be
 * sent (then freed by rrl_batch_free()).
 */
rrl_batches_t *rrl_batches_new(void) RRL_NOEXCEPT;
void rrl_batches_free(rrl_batches_t *batches) RRL_NOEXCEPT;
rrl_batch_t *rrl_batches_get(rrl_batches_t *batches, void *node,
    unsigned slot, int *created) RRL_NOEXCEPT;
rrl_batch_t *rrl_batches_pop(rrl_batches_t *batches) RRL_NOEXCEPT;
void rrl_batches_take(rrl_batches_t *batches, rrl_batch_t *batch)
    RRL_NOEXCEPT;


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
