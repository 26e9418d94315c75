#include "script/rate.hpp"

namespace rrl {

namespace {

constexpr std::uint64_t max_ms = std::uint64_t{1} << 52;

// The longest PERIOD: longer ones are not rate limits, and every duration
// the script returns stays within what the reply check accepts.
constexpr std::uint64_t max_period_ms = std::uint64_t{365} * 86400 * 1000;

std::optional<std::uint64_t> unit_ms(std::string_view unit) {
    if (unit == "ms") return 1;
    if (unit == "s") return 1000;
    if (unit == "m") return 60 * 1000;
    if (unit == "h") return 3600 * 1000;
    if (unit == "d") return 86400 * 1000;
    if (unit == "w") return 7 * 86400 * 1000;
    return std::nullopt;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<std::uint64_t> parse_count(std::string_view text) {
    if (text.empty() || text.size() > 15) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        if (!is_digit(c)) return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

}  // namespace

std::optional<std::uint64_t> parse_time_ms(std::string_view text) {
    if (text.empty()) return std::nullopt;

    std::uint64_t total = 0;
    std::uint64_t previous_scale = ~std::uint64_t{0};
    std::size_t i = 0;

    while (i < text.size()) {
        std::size_t start = i;
        while (i < text.size() && is_digit(text[i])) i++;
        auto number = parse_count(text.substr(start, i - start));
        if (!number) return std::nullopt;

        start = i;
        while (i < text.size() && !is_digit(text[i])) i++;
        std::string_view unit = text.substr(start, i - start);

        std::optional<std::uint64_t> scale =
            unit.empty() ? std::optional<std::uint64_t>{1000} : unit_ms(unit);
        // as nginx: each unit smaller than the one before ("1h30m", not "30m1h")
        if (!scale || *scale >= previous_scale) return std::nullopt;
        previous_scale = *scale;

        if (*number > max_ms / *scale) return std::nullopt;
        total += *number * *scale;
        if (total > max_ms) return std::nullopt;
    }

    return total;
}

std::optional<Rate> parse_rate(std::string_view text) {
    std::size_t slash = text.find("r/");
    if (slash == std::string_view::npos) return std::nullopt;

    auto count = parse_count(text.substr(0, slash));
    if (!count || *count == 0 || *count > 1000000000) return std::nullopt;

    std::string_view period = text.substr(slash + 2);
    std::optional<std::uint64_t> period_ms;

    if (!period.empty() && !is_digit(period[0])) {
        period_ms = unit_ms(period);
        if (period == "ms") period_ms.reset();  // "r/ms" is too fine a grain
    } else {
        period_ms = parse_time_ms(period);
    }

    if (!period_ms || *period_ms == 0 || *period_ms > max_period_ms) {
        return std::nullopt;
    }

    return Rate{*count, *period_ms};
}

}  // namespace rrl
