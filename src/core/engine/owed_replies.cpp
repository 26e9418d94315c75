#include "engine/owed_replies.hpp"

namespace rrl {

bool ReplyCount::read(bool nested) {
    if (nested) return true;
    if (++replies <= sent) return true;
    unsolicited = true;
    return false;
}

}  // namespace rrl
