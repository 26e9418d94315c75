#include "local/deny_cache.hpp"

#include <cstring>

#include "script/algorithm.hpp"
#include "local/deny_entry.hpp"
#include "base/rrl_deny_cache_types.h"

namespace rrl {

namespace {

// CRC-32 (IEEE 802.3, as zlib's crc32()): continuing from a previous
// result is the CRC of the bytes of both.
std::uint32_t crc32(std::uint32_t crc, const unsigned char* p,
                    std::size_t len) {
    crc = ~crc;
    for (std::size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

}  // namespace

bool deny_usable(bool dry_run, bool cluster, bool combined) {
    return !dry_run && !(cluster && combined);
}

rrl_deny_limit_t deny_limit(int algorithm, std::uint64_t limit,
                            std::uint64_t period_ms, std::uint64_t burst,
                            std::uint32_t redis, std::uint64_t cost) {
    rrl_deny_limit_t l{};
    l.algorithm = algorithm;
    l.limit = limit;
    l.period_ms = period_ms;
    l.burst = burst;
    l.redis = redis;
    l.cost = cost;
    return l;
}

std::uint32_t deny_redis(std::uint32_t tag, const void* field,
                         std::size_t len) {
    unsigned char size[8];
    std::uint64_t n = len;

    for (unsigned char& b : size) {
        b = static_cast<unsigned char>(n & 0xff);
        n >>= 8;
    }

    tag = crc32(tag, size, sizeof(size));
    return crc32(tag, static_cast<const unsigned char*>(field), len);
}

std::uint32_t deny_redis_of(const rrl_engine_conf_t& e,
                            const rrl_engine_addr_t* addrs,
                            std::size_t naddrs) {
    std::uint32_t tag = deny_redis(0, &e.mode, sizeof(e.mode));
    tag = deny_redis(tag, &e.db, sizeof(e.db));
    tag = deny_redis(tag, e.sentinel_name, e.sentinel_name_len);
    for (std::size_t i = 0; i < naddrs; i++) {
        tag = deny_redis(tag, addrs[i].name, std::strlen(addrs[i].name));
    }
    return tag;
}

int deny_answer(const rrl_deny_entry_t* entry, const rrl_deny_limit_t& limit,
                std::int64_t now_us, rrl_limit_result_t& result) {
    bool ended = entry != nullptr && entry->until_us <= now_us;
    std::int64_t v[RRL_REPLY_PER_LIMIT];

    if (entry != nullptr && !ended && deny_applies(*entry, limit, now_us, v)) {
        result = {static_cast<int>(v[0]), v[1], v[2], v[3]};
        return RRL_DENY_REJECTED;
    }

    const Algorithm* a = algorithm(limit.algorithm);
    result = {1,
              static_cast<std::int64_t>(
                  a == nullptr ? 0 : capacity(*a, limit.limit, limit.burst)),
              0, 0};
    return ended ? RRL_DENY_ENDED : RRL_DENY_MISS;
}

void deny_keep_shown(rrl_deny_entry_t& entry, const rrl_call_limit_t& limit) {
    entry.override = limit.override;
    entry.shown_limit = limit.limit;
    entry.shown_period_ms = limit.period_ms;
    entry.shown_burst = limit.burst;
}

void deny_shown(const rrl_deny_entry_t& entry, rrl_call_limit_t& limit) {
    limit.override = entry.override;
    limit.limit = entry.shown_limit;
    limit.period_ms = entry.shown_period_ms;
    limit.burst = entry.shown_burst;
}

}  // namespace rrl
