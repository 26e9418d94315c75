/*
 * The arguments of a request's script call (see call_args.hpp), built by
 * the core from plain values, and where each one is in argv.
 */

#ifndef RRL_CALL_ARGS_H
#define RRL_CALL_ARGS_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * EVALSHA <sha1> <n> <key 1..n> "" then, per limit i: <algorithm> <N>
 * <period ms> <burst> <cost>
 */
#define RRL_CALL_ARGC(n)      (4 + (1 + RRL_ARGS_PER_LIMIT) * (n))
#define RRL_CALL_KEY(i)       (3 + (i))
#define RRL_CALL_ARG(n, i, field)  (4 + (n) + RRL_ARGS_PER_LIMIT * (i) + (field))

#define RRL_CALL_ALGORITHM  0
#define RRL_CALL_LIMIT      1
#define RRL_CALL_PERIOD     2
#define RRL_CALL_BURST      3
#define RRL_CALL_COST       4

/* one limit of the request whose key is not empty */
typedef struct {
    const char           *zone;
    size_t                zone_len;
    int                   algorithm;
    uint64_t              limit;       /* N of rate=Nr/PERIOD */
    uint64_t              period_ms;
    uint64_t              burst;       /* as the algorithm uses it */
    uint64_t              cost;
    const unsigned char  *key;         /* the client's, as evaluated */
    size_t                key_len;
    uint64_t              delay;       /* D of delay=D; RRL_DELAY_NONE */
} rrl_call_limit_t;

/* "nodelay", the default: delay=B, never delays */
#define RRL_DELAY_NONE  UINT64_MAX

/* the most bytes rrl_call_args() writes for these limits; 0: bad algorithm */
size_t rrl_call_args_size(const rrl_call_limit_t *limits, size_t n)
    RRL_NOEXCEPT;

/*
 * Writes the call's RRL_CALL_ARGC(n) arguments into buf (size bytes, from
 * rrl_call_args_size()), each pointed to by argv and its length in argvlen.
 */
int rrl_call_args(char *buf, size_t size, const char *sha1, size_t sha1_len,
    const rrl_call_limit_t *limits, size_t n, const char **argv,
    size_t *argvlen) RRL_NOEXCEPT;

/*
 * Decodes the call's reply as rrl_reply_decode() does, and refuses (logged,
 * RRL_ERROR) one where a limit has more remaining than its zone can ever
 * hold: no reply of the script's.
 */
int rrl_call_reply_decode(const int64_t *values, size_t nvalues,
    const rrl_call_limit_t *limits, size_t n, rrl_limit_result_t *results,
    rrl_decision_t *decision) RRL_NOEXCEPT;

/*
 * How long a request waits in nginx (delay=D, see delay.hpp), in us: 0
 * unless it passed, else the longest of its leaky_bucket limits' waits.
 * share: K of local_share=1/K when the local zone decided, else 1.
 */
int64_t rrl_call_delay(const rrl_call_limit_t *limits,
    const rrl_limit_result_t *results, size_t n, int passed, uint64_t share)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CALL_ARGS_H */
