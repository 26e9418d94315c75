/*
 * The lease table's rules (lease=P%): each nginx server holds per key a
 * lease, units taken from the key's Redis state at once; requests consume
 * them here without Redis, one worker renews in the background, and the
 * units left of an ended lease are given back where exact. The sizing and
 * renewal rules are lease/lease.hpp's.
 *
 * All *_us times are the shim's monotonic clock, except taken_at_us
 * (Redis's time) and wall_us (the wall clock, us since the epoch: Redis's
 * windows are aligned on it).
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * rules are lease/lease.hpp's, their C API api/rrl_lease_call.h.
 */

#ifndef RRL_LEASE_TYPES_H
#define RRL_LEASE_TYPES_H

#include "base/rrl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a lease limit's reply: the usual 4, then G and the lease's lifetime */
#ifndef RRL_REPLY_LEASE
#define RRL_REPLY_LEASE  2
#endif

#define RRL_LEASE_TOKEN_BUCKET_US  100000  /* a token_bucket lease's life */
#define RRL_LEASE_MARGIN_US        2000    /* a lease ends this much early */

/* a key's entry in the lease table (shared memory, zeroed when new) */
typedef struct {
    int64_t   end_us;            /* the entry matters until then */
    int64_t   lease_end_us;      /* units usable before then */
    uint64_t  units;             /* left */
    int64_t   taken_at_us;       /* Redis's time of the lease's first grant */
    uint64_t  known;             /* remaining shown at the last answer */
    uint64_t  used;              /* units used here since that answer */
    int64_t   reset_end_us;      /* X-RateLimit-Reset from that answer */
    uint64_t  seen_cur;          /* units asked in this second ... */
    uint64_t  seen_prev;         /* ... and in the one before */
    int64_t   seen_since_us;     /* start of this second */
    int64_t   renewing_until_us; /* a renewal in flight until then; 0 none */
    uint64_t  limit;             /* the zone's when taken: another zone's */
    uint64_t  period_ms;         /*   (a reload) makes the entry none */
    uint64_t  burst;
    int64_t   algorithm;
    /*
     * units of a debt (settle=) sent to Redis while a grant was in flight:
     * that grant was counted before it, and lands that much smaller
     */
    uint64_t  owed;
    /*
     * a lease of the next window, taken ahead (fixed_window,
     * sliding_window): usable from next_start_us until next_end_us, when
     * it becomes the lease; next_units 0: none
     */
    uint64_t  next_units;
    int64_t   next_start_us;
    int64_t   next_end_us;
    int64_t   next_taken_at_us;  /* Redis's time of that window's start */
    uint64_t  next_known;
    int64_t   next_reset_end_us;
} rrl_lease_entry_t;

/* a limit of a request as the lease rules see it */
typedef struct {
    int       algorithm;
    uint64_t  limit;
    uint64_t  period_ms;
    uint64_t  burst;      /* as effective_burst() gives it */
    unsigned  percent;    /* P of lease=P% */
    uint64_t  cost;       /* 0: a renewal */
} rrl_lease_limit_t;

#define RRL_LEASE_TAKEN     0   /* metrics: a grant with no lease alive */
#define RRL_LEASE_RENEWED   1   /* a grant added to a lease alive */
#define RRL_LEASE_GIVEN_BACK 2  /* a call gave units back */
#define RRL_LEASE_REFUSED   3   /* a lease asked for and refused */
#define RRL_LEASE_EVENTS    4
#define RRL_LEASE_FROM_LEASE 0  /* metrics: a request decided from a lease */
#define RRL_LEASE_FROM_REDIS 1  /*   or after waiting on Redis */

#ifdef __cplusplus
}
#endif

#endif /* RRL_LEASE_TYPES_H */
