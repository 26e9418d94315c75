#include "deny_cache.hpp"

#include "algorithm.hpp"
#include "deny.hpp"
#include "rrl_deny_cache.h"

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

int deny_answer(const rrl_deny_entry_t* entry, const rrl_deny_limit_t& limit,
                std::int64_t now_us, std::int64_t* values) {
    bool ended = entry != nullptr && entry->until_us <= now_us;

    if (entry != nullptr && !ended &&
        deny_applies(*entry, limit, now_us, values)) {
        return RRL_DENY_REJECTED;
    }

    const Algorithm* a = algorithm(limit.algorithm);

    values[0] = 1;
    values[1] = static_cast<std::int64_t>(
        a == nullptr ? 0 : capacity(*a, limit.limit, limit.burst));
    values[2] = 0;
    values[3] = 0;
    return ended ? RRL_DENY_ENDED : RRL_DENY_MISS;
}

std::int64_t* deny_part(std::int64_t* reply, std::size_t i) {
    return reply + RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i;
}

std::size_t deny_reply(std::int64_t* reply, std::size_t nlimits,
                       std::int64_t wall_us) {
    reply[0] = 0;
    reply[1] = wall_us;
    return RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * nlimits;
}

}  // namespace rrl
