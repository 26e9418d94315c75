#include "reply_count.hpp"

namespace rrl {

void reply_count_init(rrl_reply_count_t* rc) {
    *rc = rrl_reply_count_t{};
}

void reply_count_sent(rrl_reply_count_t* rc) {
    rc->sent++;
}

bool reply_count_read(rrl_reply_count_t* rc, bool nested) {
    if (nested) return true;
    if (++rc->replies <= rc->sent) return true;
    rc->unsolicited = 1;
    return false;
}

}  // namespace rrl
