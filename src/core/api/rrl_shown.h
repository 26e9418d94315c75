/*
 * What a limited request shows (see shown.hpp): its header fields, its
 * variables and the problem+json body of its rejection, all from its
 * limits and its decision.
 */

#ifndef RRL_SHOWN_H
#define RRL_SHOWN_H

#include "base/rrl_shown_types.h"
#include "api/rrl.h"
#include "base/rrl_call_args_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The header fields of a decided request, in order: the values take the
 * returned number of bytes, written into buf and described in fields and
 * *n only when they fit in size. 0: none to show.
 */
size_t rrl_shown_fields(char *buf, size_t size, const rrl_shown_t *shown,
    rrl_field_t fields[RRL_SHOWN_FIELDS], size_t *n) RRL_NOEXCEPT;

/* A variable's name, without the "$"; NULL: no RRL_VAR_* variable. */
const char *rrl_shown_variable_name(int variable) RRL_NOEXCEPT;

/* A variable's value, as snprintf writes it; 0: it is not found. */
size_t rrl_shown_variable(char *buf, size_t size, int variable,
    const rrl_shown_t *shown) RRL_NOEXCEPT;

/* The problem+json body of a rejection with the status, as snprintf. */
size_t rrl_shown_problem(char *buf, size_t size, unsigned status,
    const rrl_shown_t *shown) RRL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RRL_SHOWN_H */
