// The deny cache's arithmetic ("redis_ratelimit_deny_cache"): a rejection
// Redis sent for one limit of a request, kept by the caller (a node of a
// shared memory zone), rejects the key's later requests locally while
// Redis would reject them too, and answers them with the reply values
// Redis would send, never a later end.
//
// Redis rejected at its time T, for a wait R after T (exact to the
// microsecond: a request at T + R - 1 us is rejected, tests/deny_entry_test.cpp).
// The caller read its own monotonic clock before sending the call (sent <=
// T), so the entry ends at sent + R: never after T + R while the two
// clocks run at the same rate. Until then Redis rejects any request of the
// same zone costing at least as much: the state only grows stricter (other
// requests consume), time alone relaxes it. The waits it announces run to
// the latest end, reply + R (T <= reply): a client that waits them out is
// not rejected again, even through a server closer to Redis. A larger cost
// waits longer than R (but in a fixed window), so only the same cost gets
// the entry's answer.
#pragma once

#include <cstdint>

#include "base/rrl_types.h"

namespace rrl {

// False unless the result is a rejection worth keeping: one that ends
// after now_us, for a cost the zone can ever allow (Redis answers a larger
// cost with a full period, not with the wait of this rejection).
bool deny_learn(std::int64_t sent_us, std::int64_t now_us,
                const rrl_deny_limit_t& limit, const rrl_limit_result_t& result,
                rrl_deny_entry_t* entry);

// Whether the entry rejects a request of `limit` at now_us: same zone and
// Redis, the entry's cost (with fixed_window, whose wait is the window's
// end for every cost: any cost from the entry's, as a smaller one may pass
// earlier, to the capacity), now_us before until_us; values then holds the
// limit's part of a script reply (passed, remaining, reset_after_us,
// retry_after_us), waits never shorter than Redis's.
bool deny_applies(const rrl_deny_entry_t& entry, const rrl_deny_limit_t& limit,
                  std::int64_t now_us, std::int64_t* values);

}  // namespace rrl
