// rrl::decode_reply_into() on the script's reply, and error_kind().
//
// Input: byte 0 picks the mode, byte 1 is nlimits, then int64 values,
// little-endian (a short tail is zero-padded).
//   mode % 8 < 5: a realistic reply built from the values (mostly valid:
//                 reaches the reported-limit and rounding code)
//   mode % 8 5,6: the raw values, n and nlimits as given (nlimits may be 0;
//                 n may not match)
//   mode % 8 == 7: nlimits so large that 2 + 4 * nlimits wraps around to n
// Invariants on RRL_OK: reported < nlimits, remaining >= 0, retry_after >= 1
// iff not passed, reset_unix >= now_us / 1e6 - 1, 1 <= reset_after <=
// retry_after when not passed, exactly nlimits results written.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/rrl.h"
#include "base/guard.hpp"
#include "fuzz_check.hpp"
#include "script/script_reply.hpp"
#include "topology/redis_errors.hpp"

namespace {

constexpr std::int64_t kSecond = 1000000;
constexpr std::int64_t kMaxDuration =
    static_cast<std::int64_t>(RRL_MAX_STATE_MS) * 1000;
constexpr std::int64_t kNow = INT64_C(1700000000) * kSecond;

class Values {
public:
    Values(const std::uint8_t* data, std::size_t size)
        : data_(data), size_(size) {}

    std::size_t count() const { return (size_ + 7) / 8; }

    std::int64_t at(std::size_t i) const {
        std::uint64_t v = 0;
        for (std::size_t b = 0; b < 8; b++) {
            std::size_t off = i * 8 + b;
            if (off < size_) v |= std::uint64_t{data_[off]} << (8 * b);
        }
        return static_cast<std::int64_t>(v);
    }

    std::vector<std::int64_t> all() const {
        std::vector<std::int64_t> v(count());
        for (std::size_t i = 0; i < v.size(); i++) v[i] = at(i);
        return v;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
};

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

// rrl::decode_reply_into(), guarded as the core's callers are: RRL_OK, or
// RRL_ERROR
int reply_decode(const std::int64_t* values, std::size_t n, std::size_t nlimits,
                 rrl_limit_result_t* limits, rrl_decision_t* d) {
    return rrl::guarded("a reply", RRL_ERROR, [&] {
        return rrl::decode_reply_into(values, n, nlimits, limits, d)
                   ? RRL_OK
                   : RRL_ERROR;
    });
}

void check_decision(const std::int64_t* values, std::size_t n,
                    std::size_t nlimits) {
    // exactly nlimits results, in a heap block of that size (ASan catches
    // a write past it); decision sentinel-filled
    std::unique_ptr<rrl_limit_result_t[]> limits(
        new rrl_limit_result_t[nlimits]);
    for (std::size_t i = 0; i < nlimits; i++) limits[i] = {7, 7, 7, 7};
    rrl_decision_t d{7, 7, 7, 7, 7, 7, 7};

    int rc = reply_decode(values, n, nlimits, limits.get(), &d);
    FUZZ_CHECK(rc == RRL_OK || rc == RRL_ERROR);
    if (rc != RRL_OK) return;

    FUZZ_CHECK(nlimits > 0);
    FUZZ_CHECK(n == RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * nlimits);
    FUZZ_CHECK(d.reported < nlimits);
    FUZZ_CHECK(d.passed == 0 || d.passed == 1);
    FUZZ_CHECK(d.now_us > 0 && d.now_us == values[1]);
    FUZZ_CHECK(d.remaining >= 0);
    FUZZ_CHECK(d.remaining == limits[d.reported].remaining);
    FUZZ_CHECK((d.retry_after >= 1) == (d.passed == 0));
    if (d.passed) FUZZ_CHECK(d.retry_after == 0);
    FUZZ_CHECK(d.reset_unix >= d.now_us / kSecond - 1);
    // the draft's t: Retry-After is never earlier
    FUZZ_CHECK(d.reset_after >= 0);
    if (!d.passed) {
        FUZZ_CHECK(d.reset_after >= 1 && d.reset_after <= d.retry_after);
    }

    bool all_passed = true;
    std::int64_t max_retry_us = 0;
    for (std::size_t i = 0; i < nlimits; i++) {
        const rrl_limit_result_t& l = limits[i];
        const std::int64_t* v = values + RRL_REPLY_HEADER +
                                RRL_REPLY_PER_LIMIT * i;
        FUZZ_CHECK(l.passed == v[0] && l.remaining == v[1] &&
                   l.reset_after_us == v[2] && l.retry_after_us == v[3]);
        FUZZ_CHECK(l.remaining >= 0);
        FUZZ_CHECK(l.reset_after_us >= 0 && l.retry_after_us >= 0);
        FUZZ_CHECK((l.retry_after_us == 0) == (l.passed == 1));
        all_passed = all_passed && l.passed;
        if (!l.passed && l.retry_after_us > max_retry_us) {
            max_retry_us = l.retry_after_us;
        }
    }
    FUZZ_CHECK(all_passed == (d.passed == 1));
    // the reported limit decided the request
    if (!d.passed) FUZZ_CHECK(limits[d.reported].passed == 0);
    if (!d.passed) {
        FUZZ_CHECK(d.retry_after >= max_retry_us / kSecond);
        FUZZ_CHECK(d.retry_after <= max_retry_us / kSecond + 1);
    }
}

// A reply of the script's shape from arbitrary values: each field is made
// valid unless a bit of `spoil` says to leave it raw.
std::vector<std::int64_t> realistic(const Values& in, std::size_t nlimits,
                                    std::uint8_t mode) {
    std::size_t next = 0;
    auto take = [&] { return in.at(next++); };
    bool spoil = (mode & 0x80) != 0;  // 1 in 2: one raw field, chosen below
    std::int64_t choice = take();
    std::size_t fields = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * nlimits;
    std::size_t spoiled = spoil ? u(choice) % fields : fields;
    bool small = (mode & 0x40) != 0;  // small ranges: ties between limits

    std::vector<std::int64_t> v(fields);
    bool all_passed = true;
    for (std::size_t i = 0; i < nlimits; i++) {
        std::int64_t* l = &v[RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * i];
        std::int64_t a = take(), b = take(), c = take(), e = take();
        bool passed = (a & 1) != 0;
        std::int64_t range = small ? 4 * kSecond : kMaxDuration + 1;
        l[0] = passed;
        l[1] = small ? static_cast<std::int64_t>(u(b) % 4)
                     : static_cast<std::int64_t>(u(b) >> 1);
        l[2] = static_cast<std::int64_t>(u(c) % u(range));
        l[3] = passed ? 0 : 1 + static_cast<std::int64_t>(u(e) % u(range - 1));
        all_passed = all_passed && passed;
    }
    v[0] = all_passed;
    std::int64_t t = take();
    // mostly a Redis TIME of today; sometimes anywhere in (0, INT64_MAX]
    v[1] = (mode & 0x20) ? 1 + static_cast<std::int64_t>(u(t) % u(INT64_MAX))
                         : kNow + static_cast<std::int64_t>(u(t) % (u(kSecond) << 32));
    if (spoiled < fields) v[spoiled] = take();
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    return fuzz::silence_core();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
    // the error classifier, on the raw bytes
    {
        std::string_view text(reinterpret_cast<const char*>(data), size);
        int kind = rrl::error_kind(text);
        bool noscript = text == "NOSCRIPT" ||
                        text.substr(0, 9) == "NOSCRIPT ";
        // the other kinds (MOVED, READONLY...): fuzz_cluster
        FUZZ_CHECK((kind == RRL_REPLY_NOSCRIPT) == noscript);
    }

    if (size < 2) return 0;
    std::uint8_t mode = data[0];
    std::size_t nlimits = data[1];
    Values in(data + 2, size - 2);

    switch (mode % 8) {
        case 5:
        case 6: {
            // raw: n as given, and every shorter n too for small inputs
            std::vector<std::int64_t> v = in.all();
            check_decision(v.data(), v.size(), nlimits);
            if (mode % 8 == 6 && !v.empty()) {
                // a prefix of the values, with nlimits matching that n or not
                std::size_t n = u(v[0]) % (v.size() + 1);
                check_decision(v.data(), n, nlimits);
                if (n >= RRL_REPLY_HEADER) {
                    check_decision(v.data(), n, (n - RRL_REPLY_HEADER) /
                                                    RRL_REPLY_PER_LIMIT);
                }
            }
            break;
        }
        case 7: {
            // 2 + 4 * nlimits wraps around to a small n: must be refused
            // before anything is written (no limits array that big exists)
            std::vector<std::int64_t> v = in.all();
            std::size_t k = nlimits % 4;
            std::size_t n = RRL_REPLY_HEADER + RRL_REPLY_PER_LIMIT * k;
            if (v.size() < n) v.resize(n);
            std::size_t huge = (SIZE_MAX / RRL_REPLY_PER_LIMIT + 1) + k;
            rrl_limit_result_t limits[4];
            rrl_decision_t d{};
            FUZZ_CHECK(reply_decode(v.data(), n, huge, limits, &d) ==
                       RRL_ERROR);
            break;
        }
        default: {
            std::size_t n = 1 + nlimits % 8;
            std::vector<std::int64_t> v = realistic(in, n, mode);
            check_decision(v.data(), v.size(), n);
            break;
        }
    }
    return 0;
}
