// The configuration parsers: parse_rate(), parse_time_ms(),
// zone_name_valid(), find_algorithm(), and effective_burst() / capacity() /
// state_lifetime_ms() on what they parse.
//
// Input: fields separated by NUL bytes. Every parser sees every field, each
// copied to a heap block of its exact length (ASan catches a read past it).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "script/algorithm.hpp"
#include "fuzz_check.hpp"
#include "script/key.hpp"
#include "script/rate.hpp"
#include "api/rrl.h"

namespace {

constexpr std::uint64_t kMaxPeriodMs = UINT64_C(365) * 86400 * 1000;
constexpr std::uint64_t kMaxTimeMs = UINT64_C(1) << 52;

struct Field {
    std::unique_ptr<char[]> data;
    std::size_t len;

    explicit Field(std::string_view s)
        : data(new char[s.size() == 0 ? 1 : s.size()]), len(s.size()) {
        if (len != 0) std::memcpy(data.get(), s.data(), len);
    }
};

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

// RRL_OK and *rate, or RRL_ERROR (*rate untouched)
int parse_rate(std::string_view s, rrl::Rate* rate) {
    Field f(s);
    auto parsed = rrl::parse_rate({f.data.get(), f.len});
    if (!parsed) return RRL_ERROR;
    *rate = *parsed;
    return RRL_OK;
}

int parse_time(std::string_view s, std::uint64_t* ms) {
    Field f(s);
    auto parsed = rrl::parse_time_ms({f.data.get(), f.len});
    if (!parsed) return RRL_ERROR;
    *ms = *parsed;
    return RRL_OK;
}

void check_rate(std::string_view s, std::vector<rrl::Rate>* rates) {
    rrl::Rate rate{7, 7};
    int rc = parse_rate(s, &rate);
    FUZZ_CHECK(rc == RRL_OK || rc == RRL_ERROR);
    rrl::Rate again{9, 9};
    FUZZ_CHECK(parse_rate(s, &again) == rc);  // deterministic
    if (rc != RRL_OK) {
        FUZZ_CHECK(rate.count == 7 && rate.period_ms == 7);  // untouched
        return;
    }
    FUZZ_CHECK(again.count == rate.count && again.period_ms == rate.period_ms);
    FUZZ_CHECK(rate.count >= 1 && rate.count <= 1000000000);
    FUZZ_CHECK(rate.period_ms >= 1 && rate.period_ms <= kMaxPeriodMs);
    rates->push_back(rate);
}

void check_time(std::string_view s, std::vector<std::uint64_t>* times) {
    std::uint64_t ms = 7;
    int rc = parse_time(s, &ms);
    FUZZ_CHECK(rc == RRL_OK || rc == RRL_ERROR);
    std::uint64_t again = 9;
    FUZZ_CHECK(parse_time(s, &again) == rc);  // deterministic
    if (rc != RRL_OK) {
        FUZZ_CHECK(ms == 7);
        return;
    }
    FUZZ_CHECK(again == ms);
    FUZZ_CHECK(ms <= kMaxTimeMs);
    times->push_back(ms);

    // "<n>ms" is n, "<n>s" and "<n>" are n seconds (when they parse)
    if (all_digits(s)) {
        std::uint64_t n = 0;
        bool fits = s.size() <= 15;
        for (char c : s) n = n * 10 + static_cast<std::uint64_t>(c - '0');
        FUZZ_CHECK(fits);  // it parsed
        FUZZ_CHECK(ms == n * 1000);
        std::uint64_t v = 7;
        if (parse_time(std::string(s) + "ms", &v) == RRL_OK) {
            FUZZ_CHECK(v == n);
        } else {
            FUZZ_CHECK(n > kMaxTimeMs);
        }
        if (parse_time(std::string(s) + "s", &v) == RRL_OK) {
            FUZZ_CHECK(v == ms);
        }
    }
}

void check_ms_roundtrip(std::uint64_t n) {
    std::string s = std::to_string(n) + "ms";
    std::uint64_t v = 7;
    if (parse_time(s, &v) == RRL_OK) {
        FUZZ_CHECK(v == n);
    } else {
        // only too many digits or too large refuse a plain "<n>ms"
        FUZZ_CHECK(n > kMaxTimeMs || std::to_string(n).size() > 15);
    }
}

void check_zone(std::string_view s) {
    Field f(s);
    if (!rrl::zone_name_valid({f.data.get(), f.len})) return;
    FUZZ_CHECK(!s.empty());
    for (char c : s) {
        FUZZ_CHECK(c > ' ' && c <= '~' && c != '{' && c != '}' && c != ':');
    }
}

int check_algorithm(std::string_view s) {
    Field f(s);
    const rrl::Algorithm* a = rrl::find_algorithm({f.data.get(), f.len});
    if (a == nullptr) return RRL_ERROR;
    int id = a->id;
    FUZZ_CHECK(id >= 0 && id < RRL_ALGORITHM_COUNT);
    FUZZ_CHECK(rrl::algorithm(id) == a);
    FUZZ_CHECK(s == a->name || s == "gcra");
    FUZZ_CHECK(rrl::find_algorithm(a->name) == a);
    return id;
}

void check_limits(int algorithm, std::uint64_t limit, std::uint64_t period_ms,
                  std::uint64_t burst_arg) {
    const rrl::Algorithm* a = rrl::algorithm(algorithm);
    FUZZ_CHECK((a != nullptr) ==
               (algorithm >= 0 && algorithm < RRL_ALGORITHM_COUNT));
    if (a == nullptr) return;
    std::uint64_t burst = rrl::effective_burst(*a, limit, burst_arg);
    std::uint64_t capacity = rrl::capacity(*a, limit, burst);
    (void)capacity;
    std::uint64_t lifetime =
        rrl::state_lifetime_ms(*a, limit, period_ms, burst);
    FUZZ_CHECK(rrl::state_lifetime_ms(*a, limit, period_ms, burst) == lifetime);

    if (burst_arg != RRL_BURST_UNSET) {
        FUZZ_CHECK(burst == burst_arg);
    } else {
        FUZZ_CHECK(burst == (algorithm == RRL_TOKEN_BUCKET ? limit : 0));
    }
    if (limit == 0) {
        FUZZ_CHECK(lifetime == UINT64_MAX);
        return;
    }
    // a key's state matters for at least one period (while periods are
    // exact in a double, as every parsed one is)
    if (period_ms <= (UINT64_C(1) << 53)) FUZZ_CHECK(lifetime >= period_ms);
    if (algorithm == RRL_SLIDING_WINDOW && period_ms <= (UINT64_C(1) << 52)) {
        FUZZ_CHECK(lifetime == 2 * period_ms);
    }
    if ((algorithm == RRL_FIXED_WINDOW || algorithm == RRL_SLIDING_LOG) &&
        period_ms <= (UINT64_C(1) << 53)) {
        FUZZ_CHECK(lifetime == period_ms);
    }
}

std::uint64_t raw64(std::string_view s) {
    std::uint64_t v = 0;
    std::memcpy(&v, s.data(), s.size() < 8 ? s.size() : 8);
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    return fuzz::silence_core();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);

    std::vector<std::string_view> fields;
    for (std::size_t start = 0;;) {
        std::size_t nul = input.find('\0', start);
        if (nul == std::string_view::npos) {
            fields.push_back(input.substr(start));
            break;
        }
        fields.push_back(input.substr(start, nul - start));
        start = nul + 1;
        if (fields.size() >= 64) break;
    }

    std::vector<rrl::Rate> rates;
    std::vector<std::uint64_t> times;
    int algorithm = RRL_ERROR;

    for (std::string_view f : fields) {
        check_rate(f, &rates);
        check_time(f, &times);
        check_zone(f);
        int id = check_algorithm(f);
        if (id != RRL_ERROR) algorithm = id;
    }
    for (std::uint64_t t : times) check_ms_roundtrip(t);
    check_ms_roundtrip(raw64(input));

    // the zone's numbers, from what parsed: algorithm (else from the first
    // byte, sometimes out of range), rate, burst (a parsed time, unset, or
    // raw bytes)
    if (algorithm == RRL_ERROR && size > 0) {
        algorithm = static_cast<int>(data[0] % (RRL_ALGORITHM_COUNT + 2)) - 1;
    }
    std::vector<std::uint64_t> bursts = {RRL_BURST_UNSET, 0,
                                         raw64(fields.back())};
    for (std::uint64_t t : times) bursts.push_back(t / 1000);
    if (rates.empty()) rates.push_back({raw64(fields.front()), raw64(input)});
    for (const rrl::Rate& r : rates) {
        for (std::uint64_t b : bursts) {
            check_limits(algorithm, r.count, r.period_ms, b);
        }
    }
    return 0;
}
