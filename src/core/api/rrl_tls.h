/*
 * The C API of TLS to Redis (tls.hpp): the SSL context of a configuration,
 * made when nginx reads it, freed with it; the engine's connections use it.
 */

#ifndef RRL_TLS_H
#define RRL_TLS_H

#include "base/rrl_tls_types.h"
#include "api/rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ca: NULL for the system's CAs; cert and key: NULL for none; the files'
 * full names, NUL-terminated. NULL with why (NUL-terminated, size bytes)
 * naming the file that cannot be used and why.
 */
rrl_tls_t *rrl_tls_new(const char *ca, const char *cert, const char *key,
    int verify, char *why, size_t size) RRL_NOEXCEPT;
/* tls: an rrl_tls_t (void *: a pool cleanup's handler too) */
void rrl_tls_free(void *tls) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_TLS_H */
