/*
 * The C API of a worker's Redis engine (engine.hpp): its connections
 * (hiredis contexts, on the event loop the shim lends it), the batches of
 * script calls, the topology of Cluster and Sentinel modes, and the calls
 * of requests. One engine a worker: made in init_process, freed in
 * exit_process. It knows no request: a call reports to the caller's done().
 */

#ifndef RRL_ENGINE_H
#define RRL_ENGINE_H

#include "base/rrl_call_args_types.h"
#include "base/rrl_engine_types.h"
#include "api/rrl.h"
#include "api/rrl_metrics_count.h"
#include "api/rrl_request.h"
#include "api/rrl_tls.h"

#ifdef __cplusplus
extern "C" {
#endif

/* conf and loop are copied; NULL: no memory (logged) */
rrl_engine_t *rrl_engine_new(const rrl_engine_conf_t *conf,
    const rrl_loop_t *loop) RRL_NOEXCEPT;
/* the worker exits: connections freed, no reconnect; then freed. NULL: none */
void rrl_engine_free(rrl_engine_t *engine) RRL_NOEXCEPT;

/*
 * The script's check of the request's limits, sha the script's
 * SHA-1: in a cluster one part a slot of the keys, each to its primary, in
 * the batches of this turn (engine/engine.hpp). Keys and arguments are
 * copied. done(r, data) runs once, from a posted event, after every reply,
 * a failure or the timeout; the request's reply (rrl_request_reply()) is
 * written then, and until then or rrl_engine_detach() the request must
 * live. NULL: not made now (no connection, the breaker open, too many
 * parked: logged and counted); decide at once.
 */
rrl_engine_call_t *rrl_engine_call(rrl_engine_t *engine, const char *sha,
    size_t sha_len, rrl_request_t *request, rrl_engine_done_pt done, void *r, void *data) RRL_NOEXCEPT;
/* the request goes away: done() will not run, the reply is dropped */
void rrl_engine_detach(rrl_engine_call_t *call) RRL_NOEXCEPT;

/* this worker's gauges: parked calls, nodes of limits in use */
void rrl_engine_gauges(const rrl_engine_t *engine, rrl_metrics_t *m)
    RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_ENGINE_H */
