/*
 * The C API of TLS to Redis (tls.hpp): the SSL context of a configuration,
 * made when nginx reads it (rrl_server_tls()), freed with it; the engine's
 * connections use it.
 */

#ifndef RRL_TLS_H
#define RRL_TLS_H

#include "base/rrl_tls_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tls: an rrl_tls_t (void *: a pool cleanup's handler too) */
void rrl_tls_free(void *tls) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_TLS_H */
