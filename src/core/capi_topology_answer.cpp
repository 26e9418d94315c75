// Topology answers' extern "C" functions (rrl_topology_answer.h); none can
// throw.
#include <algorithm>
#include <cstring>

#include "capi.hpp"
#include "rrl_topology_answer.h"
#include "topology_answer.hpp"

namespace {

// NUL-terminated, cut to RRL_ANSWER_WHY_MAX bytes
void put_why(const std::string& text, char* why) {
    std::size_t len =
        std::min(text.size(), std::size_t{RRL_ANSWER_WHY_MAX - 1});
    std::memcpy(why, text.data(), len);
    why[len] = '\0';
}

}  // namespace

int rrl_cluster_slots_answer(const rrl_value_t* reply, rrl_slot_range_t* ranges,
                             size_t max, size_t* n, char* why) noexcept {
    why[0] = '\0';
    return rrl::capi::guarded("rrl_cluster_slots_answer", RRL_ERROR, [&] {
        auto failure = rrl::answer_failure(reply, true);
        if (failure) {
            put_why(*failure, why);
            return RRL_ERROR;
        }
        return rrl_cluster_slots_parse(reply, ranges, max, n);
    });
}

int rrl_sentinel_answer(const rrl_value_t* reply, const char* name,
                        size_t name_len, char* host, unsigned* port,
                        char* why) noexcept {
    why[0] = '\0';
    return rrl::capi::guarded("rrl_sentinel_answer", RRL_ERROR, [&] {
        auto failure = rrl::answer_failure(reply, false);
        if (failure) {
            put_why(*failure, why);
            return RRL_ERROR;
        }
        int rc = rrl_sentinel_addr_parse(reply, host, port);
        if (rc == RRL_UNKNOWN) {
            put_why(rrl::answer_unknown({name, name_len}), why);
            return RRL_ERROR;
        }
        return rc;
    });
}
