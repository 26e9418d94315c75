/*
 * The C API of the refresher (refresher.hpp): when a question about the
 * topology (CLUSTER SLOTS, a Sentinel's get-master-addr-by-name) is sent,
 * and which seed or sentinel is asked.
 */

#ifndef RRL_REFRESHER_H
#define RRL_REFRESHER_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sends the question of generation (its answer gives it back): RRL_OK */
typedef int (*rrl_refresher_send_pt)(void *data, uint64_t generation);
/* (re)sets the shim's one timer to ms; 0: cancels it */
typedef void (*rrl_refresher_timer_pt)(void *data, uint64_t ms);

typedef struct {
    uint64_t                 min_ms;      /* at most one question this often */
    uint64_t                 retry_ms;    /* after `quick` failures in a row */
    uint64_t                 quick;
    uint64_t                 poll_ms;     /* after an answer; 0: no polling */
    uint64_t                 timeout_ms;  /* of a question */
    int                      rotate;      /* a failure: the next target */
    rrl_refresher_send_pt    send;
    rrl_refresher_timer_pt   timer;
    void                    *data;
} rrl_refresher_conf_t;

/*
 * One question out at a time, at most one per min_ms; after a failure
 * another in min_ms (the first `quick` failures in a row), then in
 * retry_ms; the next poll poll_ms after each answer. The shim keeps the
 * timer the refresher sets, a timeout, a delay or the next poll, and says
 * when it fires. Times are ms of the shim's clock.
 */
typedef struct {
    rrl_refresher_conf_t  conf;
    uint64_t              failures;    /* in a row */
    uint64_t              generation;  /* of the question awaited */
    uint64_t              target;      /* the next seed or sentinel, mod n */
    int64_t               last_ms;     /* when one was last sent */
    int                   sent;        /* one ever was */
    int                   asking;      /* one is out */
    int                   again;       /* wanted while one was out */
    int                   polling;     /* the timer is the next poll */
    int                   timer_set;
    int                   stopped;
} rrl_refresher_t;

void rrl_refresher_init(rrl_refresher_t *r, const rrl_refresher_conf_t *conf)
    RRL_NOEXCEPT;
/* a question is wanted: sent now, after a delay or after the one out */
void rrl_refresher_want(rrl_refresher_t *r, int64_t now_ms) RRL_NOEXCEPT;
/* the timer fired: 1 if it was a question's timeout (then failed), else 0 */
int rrl_refresher_fired(rrl_refresher_t *r) RRL_NOEXCEPT;
/* the question failed (timed out, a useless answer): asked again later */
void rrl_refresher_failed(rrl_refresher_t *r) RRL_NOEXCEPT;
/* an answer of generation: 1 if it is the one awaited */
int rrl_refresher_answer(rrl_refresher_t *r, uint64_t generation)
    RRL_NOEXCEPT;
/* the answer helped: 1 if a question was wanted meanwhile (ask again) */
int rrl_refresher_answered(rrl_refresher_t *r) RRL_NOEXCEPT;
/* the one of n targets to ask; take: the one after it is next */
size_t rrl_refresher_target(rrl_refresher_t *r, size_t n, int take)
    RRL_NOEXCEPT;
/* exiting: nothing is asked any more, an answer out is ignored */
void rrl_refresher_stop(rrl_refresher_t *r) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_REFRESHER_H */
