// How the shim uses the deny cache (rrl_deny_cache.h): for which limits,
// for which Redis (a tag of its configuration), and its answer for a
// limit of a request. The entries' arithmetic is deny_entry.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/rrl_call_args_types.h"
#include "base/rrl_deny_cache_types.h"
#include "base/rrl_engine_types.h"
#include "base/rrl_types.h"

namespace rrl {

// Not in a dry run, nor for a combined zone in a cluster (rrl_deny_cache.h).
bool deny_usable(bool dry_run, bool cluster, bool combined);

// A request's limit of a zone (burst: effective_burst()'s), all set.
rrl_deny_limit_t deny_limit(int algorithm, std::uint64_t limit,
                            std::uint64_t period_ms, std::uint64_t burst,
                            std::uint32_t redis, std::uint64_t cost);

// The tag of a Redis (rrl_deny_limit_t.redis), so that a reload pointing
// the module at another Redis (or database) does not apply the old one's
// rejections: from 0, each field of the configuration that names it in
// turn, e.g. mode, database, sentinel name, addresses. A field counts with
// its length ("a" "bc" is not "ab" "c"); the same fields give the same tag.
// The tag with one more field: CRC-32 of its length (8 bytes, little
// endian) and bytes, continued from tag.
std::uint32_t deny_redis(std::uint32_t tag, const void* field, std::size_t len);

// The tag of e's Redis, whose addresses are addrs (e's are set at start):
// its mode, db and sentinel name, then each address's name, in turn.
std::uint32_t deny_redis_of(const rrl_engine_conf_t& e,
                            const rrl_engine_addr_t* addrs, std::size_t naddrs);

// RRL_DENY_MISS, RRL_DENY_REJECTED or RRL_DENY_ENDED, the limit's result
// in result (see rrl_deny_answer()); entry may be null.
int deny_answer(const rrl_deny_entry_t* entry, const rrl_deny_limit_t& limit,
                std::int64_t now_us, rrl_limit_result_t& result);

// The limit an entry shows on the requests it rejects: the one the
// rejection was decided under (an override's), kept from limit; then
// written into the limit of such a request.
void deny_keep_shown(rrl_deny_entry_t& entry, const rrl_call_limit_t& limit);
void deny_shown(const rrl_deny_entry_t& entry, rrl_call_limit_t& limit);

}  // namespace rrl
