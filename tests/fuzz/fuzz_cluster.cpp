// error_kind() and parse_redirect() on the raw bytes, and
// parse_cluster_slots() and parse_sentinel_primary() on a reply tree
// decoded from them.
//
// Tree encoding: a byte picks the type (% 6: string, array, integer, nil,
// status, error); a string takes a length byte (% 32) and that many bytes;
// an array a count byte (% 8) and its elements (depth at most 4); an
// integer a byte that picks a slot-sized, port-sized or raw 64-bit value.
// Missing bytes read as 0. Byte 0 is also the max of ranges (% 8).
// Invariants on a parse: ranges within bounds and disjoint, at most max of
// them, hosts shorter than RRL_HOST_MAX, ports 1..65535.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "topology/redis_errors.hpp"
#include "fuzz_check.hpp"
#include "api/rrl.h"
#include "topology/topology_replies.hpp"

namespace {

class Decoder {
   public:
    Decoder(const std::uint8_t* data, std::size_t size)
        : data_(data), size_(size) {}

    rrl::Value value(int depth) {
        rrl::Value v{};
        v.type = 1 + byte() % 6;
        switch (v.type) {
            case rrl::kValueString:
            case rrl::kValueStatus:
            case rrl::kValueError: {
                std::size_t len = byte() % 32;
                if (len > size_ - pos_) len = size_ - pos_;
                v.str = reinterpret_cast<const char*>(data_ + pos_);
                v.len = len;
                pos_ += len;
                break;
            }
            case rrl::kValueArray: {
                std::size_t n = depth < 4 ? byte() % 8 : 0;
                if (n == 0) break;
                arrays_.emplace_back(new rrl::Value[n]);
                rrl::Value* elements = arrays_.back().get();
                for (std::size_t i = 0; i < n; i++) {
                    elements[i] = value(depth + 1);
                }
                v.elements = elements;
                v.nelements = n;
                break;
            }
            case rrl::kValueInteger: {
                std::uint8_t how = byte();
                std::uint64_t raw = 0;
                for (int b = 0; b < (how % 3 == 2 ? 8 : 2); b++) {
                    raw |= std::uint64_t{byte()} << (8 * b);
                }
                if (how % 3 == 0) raw %= 16400;
                if (how & 0x80) raw = 0 - raw;  // negative, wrapping
                v.integer = static_cast<long long>(raw);
                break;
            }
            default:
                break;
        }
        return v;
    }

   private:
    std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }

    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    std::vector<std::unique_ptr<rrl::Value[]>> arrays_;
};

void check_host(const std::string& host) {
    FUZZ_CHECK(host.size() < RRL_HOST_MAX);
    for (char c : host) FUZZ_CHECK(c > ' ' && c <= '~');
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    return fuzz::silence_core();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);

    int kind = rrl::error_kind(text);
    FUZZ_CHECK(kind >= RRL_REPLY_ERROR && kind <= RRL_REPLY_LOADING);

    if (auto r = rrl::parse_redirect(text)) {
        FUZZ_CHECK(kind == RRL_REPLY_MOVED || kind == RRL_REPLY_ASK);
        FUZZ_CHECK(r->slot < RRL_CLUSTER_SLOTS);
        FUZZ_CHECK(r->target.port >= 1 && r->target.port <= 65535);
        check_host(r->target.host);
        FUZZ_CHECK(!r->target.host.empty());
        FUZZ_CHECK(text.find(r->target.host) != std::string_view::npos);
    }

    Decoder decoder(data, size);
    rrl::Value reply = decoder.value(0);

    std::size_t max = size > 0 ? data[0] % 8 : 0;
    std::string error;
    if (auto ranges = rrl::parse_cluster_slots(reply, max, &error)) {
        std::size_t n = ranges->size();
        FUZZ_CHECK(reply.type == rrl::kValueArray && n == reply.nelements);
        FUZZ_CHECK(n <= max);
        for (std::size_t i = 0; i < n; i++) {
            const rrl::SlotRange& r = (*ranges)[i];
            FUZZ_CHECK(r.start <= r.end && r.end < RRL_CLUSTER_SLOTS);
            FUZZ_CHECK(r.primary.port >= 1 && r.primary.port <= 65535);
            check_host(r.primary.host);
            for (std::size_t j = 0; j < i; j++) {
                FUZZ_CHECK(r.end < (*ranges)[j].start ||
                           r.start > (*ranges)[j].end);
            }
        }
    }

    auto answer = rrl::parse_sentinel_primary(reply, &error);
    FUZZ_CHECK((answer && !answer->known) == (reply.type == rrl::kValueNil));
    if (answer && answer->known) {
        FUZZ_CHECK(answer->primary.port >= 1 && answer->primary.port <= 65535);
        check_host(answer->primary.host);
        FUZZ_CHECK(!answer->primary.host.empty());
    }
    return 0;
}
