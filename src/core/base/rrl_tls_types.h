/*
 * The types of TLS to Redis (tls.hpp): the SSL context of a configuration,
 * made when nginx reads it, freed with it; the engine's connections use it.
 *
 * The types and constants, shared by the core (C++) and the shim (C): the
 * functions are the C API's, api/rrl_tls.h.
 */

#ifndef RRL_TLS_TYPES_H
#define RRL_TLS_TYPES_H

#include "base/rrl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrl_tls_s  rrl_tls_t;

#ifdef __cplusplus
}
#endif

#endif /* RRL_TLS_TYPES_H */
