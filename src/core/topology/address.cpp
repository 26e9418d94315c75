#include "topology/address.hpp"

#include "base/rrl_types.h"

namespace rrl {

bool host_valid(std::string_view host) {
    if (host.empty() || host.size() >= RRL_HOST_MAX || host == "?") {
        return false;
    }
    for (char c : host) {
        if (c <= ' ' || c > '~' || c == '[' || c == ']') return false;
    }
    return true;
}

std::optional<unsigned> parse_small_decimal(std::string_view text) {
    if (text.empty() || text.size() > 5) return std::nullopt;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    return value;
}

std::optional<unsigned> parse_port(std::string_view text) {
    std::optional<unsigned> port = parse_small_decimal(text);
    if (!port || *port == 0 || *port > 65535) return std::nullopt;
    return port;
}

std::optional<Address> parse_host_port(std::string_view text) {
    std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::optional<unsigned> port = parse_port(text.substr(colon + 1));
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (!port || !host_valid(host)) return std::nullopt;
    return Address{std::string(host), *port};
}

}  // namespace rrl
