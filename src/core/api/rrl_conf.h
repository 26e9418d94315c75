/*
 * The C API of the directives' grammar (server_conf, zone_conf and
 * limit_conf): the shim hands over a directive's words one at a time and
 * gets values, or a message that names the directive and the bad word, to
 * log with the file and line. Every string given back points into a word.
 */

#ifndef RRL_CONF_H
#define RRL_CONF_H

#include "base/rrl_conf_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"
#include "api/rrl_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the defaults; the caller then sets the parsers, min_size, u.fail.local */
void rrl_conf_init(rrl_conf_t *conf, int kind, const char *directive)
    RRL_NOEXCEPT;
/* RRL_OK, RRL_CONF_HOST (see above) or RRL_ERROR with err */
int rrl_conf_word(rrl_conf_t *conf, const char *word, size_t len)
    RRL_NOEXCEPT;
/* after the last word: RRL_OK or RRL_ERROR with err */
int rrl_conf_done(rrl_conf_t *conf) RRL_NOEXCEPT;

/*
 * The engine's configuration of a server's: all but the addresses, the
 * server as written, the script's sha and the TLS contexts (tls,
 * sentinel_tls), left NULL; the strings point into sc's words.
 */
void rrl_server_engine_conf(const rrl_server_conf_t *sc,
    rrl_engine_conf_t *conf) RRL_NOEXCEPT;

/*
 * The SSL context (rrl_tls.h) of sc's files and tls_verify, a relative name
 * under prefix (nginx's conf prefix, as ngx_conf_full_name() has it); NULL
 * with why (NUL-terminated, size bytes) naming the file that cannot be used
 * and why. No file: the system's CAs, no client certificate.
 */
rrl_tls_t *rrl_server_tls(const rrl_server_conf_t *sc, const char *prefix,
    size_t prefix_len, char *why, size_t size) RRL_NOEXCEPT;

/*
 * The zone's part of its requests' limits, made once at configuration:
 * name (the caller's lasting copy), the rate, the algorithm, overrides and
 * lease; no override yet, nodelay, cost 0 and no key until a request's.
 */
void rrl_zone_call_limit(const rrl_zone_conf_t *zone, const char *name,
    size_t name_len, rrl_call_limit_t *limit) RRL_NOEXCEPT;

/*
 * A limit against its zone, once both are known: its constant cost (0: a
 * variable's, checked per request) within the zone's capacity, delay=D
 * with the zone's algorithm and burst. RRL_OK, or RRL_ERROR with a
 * message in err (RRL_CONF_ERR_MAX + 1 bytes) that names the directive;
 * the caller adds FILE:LINE.
 */
int rrl_limit_check(uint64_t cost, uint64_t capacity, uint64_t delay,
    int algorithm, uint64_t burst, const char *zone, size_t zone_len,
    const char *directive, char *err) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_CONF_H */
