/*
 * The setup of a new Redis connection (see handshake.hpp): which commands
 * it sends before any call, in which order, and when it works.
 */

#ifndef RRL_HANDSHAKE_H
#define RRL_HANDSHAKE_H

#include "rrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the steps: events, and commands to send */
#define RRL_HANDSHAKE_NONE         0   /* nothing follows */
#define RRL_HANDSHAKE_CONNECTED    1   /* the connection is up */
#define RRL_HANDSHAKE_AUTH         2   /* AUTH password */
#define RRL_HANDSHAKE_AUTH_USER    3   /* AUTH username password (ACL) */
#define RRL_HANDSHAKE_SELECT       4   /* SELECT db */
#define RRL_HANDSHAKE_SETNAME      5   /* CLIENT SETNAME */
#define RRL_HANDSHAKE_SCRIPT_LOAD  6   /* SCRIPT LOAD the script */
#define RRL_HANDSHAKE_READY        7   /* the connection works */

#define RRL_HANDSHAKE_MAX   3   /* commands queued on connect, at most */
#define RRL_HANDSHAKE_ARGS  3   /* arguments of a command, at most */

/* what a connection is set up with: to a Redis of limits or a Sentinel */
typedef struct {
    int          sentinel;
    const char  *username;        /* len 0: none; not a Sentinel's */
    size_t       username_len;
    const char  *password;        /* a Sentinel's own for a Sentinel */
    size_t       password_len;
    char         db[24];          /* "" or the database's number */
} rrl_handshake_t;

void rrl_handshake_init(rrl_handshake_t *hs, int sentinel,
    const char *username, size_t username_len, const char *password,
    size_t password_len, uint64_t db) RRL_NOEXCEPT;

/* the commands queued at once on connect, in order: returns how many */
size_t rrl_handshake_plan(const rrl_handshake_t *hs,
    int steps[RRL_HANDSHAKE_MAX]) RRL_NOEXCEPT;

/*
 * What follows step's success (or RRL_HANDSHAKE_CONNECTED): a command to
 * send, RRL_HANDSHAKE_READY or RRL_HANDSHAKE_NONE.
 */
int rrl_handshake_next(const rrl_handshake_t *hs, int step) RRL_NOEXCEPT;

/*
 * The command of step as arguments, pointing into hs and the script:
 * returns how many, 0 for a step that is no command.
 */
size_t rrl_handshake_command(const rrl_handshake_t *hs, int step,
    const char *argv[RRL_HANDSHAKE_ARGS],
    size_t argvlen[RRL_HANDSHAKE_ARGS]) RRL_NOEXCEPT;

/* a step's command, for logs: "AUTH", "SELECT", ...; "" for an event */
const char *rrl_handshake_name(int step) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_HANDSHAKE_H */
