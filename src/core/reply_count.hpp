// The replies a Redis connection is owed. Each command sent is owed one
// top-level reply; an element of a reply is part of it. A reply no command
// awaits (a broken or hostile server: hiredis 0.14 would assert() on it)
// is caught as it is read, so the connection fails instead of the worker.
#pragma once

#include "rrl_reply_count.h"

namespace rrl {

void reply_count_init(rrl_reply_count_t* rc);

void reply_count_sent(rrl_reply_count_t* rc);

// False, and unsolicited set, for a top-level reply nothing awaits.
bool reply_count_read(rrl_reply_count_t* rc, bool nested);

}  // namespace rrl
