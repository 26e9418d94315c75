#include "engine/retry.hpp"

#include "base/rrl_types.h"

namespace rrl {

RetryAction retry_action(int kind, bool reloaded, bool redirected) {
    if (kind == RRL_REPLY_NOSCRIPT && !reloaded) {
        return RetryAction::load_script;
    }

    if ((kind == RRL_REPLY_MOVED || kind == RRL_REPLY_ASK) && !redirected) {
        return RetryAction::redirect;
    }

    return RetryAction::answer;
}

bool retry_counts_ok(bool replied, bool array, int kind) {
    return replied && (array || kind == RRL_REPLY_NOSCRIPT ||
                       kind == RRL_REPLY_MOVED || kind == RRL_REPLY_ASK);
}

RetryAsk retry_ask(int kind) {
    switch (kind) {
        case RRL_REPLY_READONLY:
        case RRL_REPLY_MASTERDOWN:
            return RetryAsk::sentinel;
        case RRL_REPLY_CLUSTERDOWN:
        case RRL_REPLY_MOVED:
        case RRL_REPLY_ASK:
            return RetryAsk::cluster;
        default:
            return RetryAsk::nobody;
    }
}

}  // namespace rrl
