// The extern "C" face of the replies owed (rrl_reply_count.h).
#include "reply_count.hpp"
#include "rrl_reply_count.h"

void rrl_reply_count_init(rrl_reply_count_t* rc) noexcept {
    rrl::reply_count_init(rc);
}

void rrl_reply_count_sent(rrl_reply_count_t* rc) noexcept {
    rrl::reply_count_sent(rc);
}

int rrl_reply_count_read(rrl_reply_count_t* rc, int nested) noexcept {
    return rrl::reply_count_read(rc, nested != 0) ? 1 : 0;
}
