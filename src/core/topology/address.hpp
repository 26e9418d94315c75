// A server's address as Redis' replies give it (MOVED and ASK errors,
// CLUSTER SLOTS, SENTINEL get-master-addr-by-name). It comes from the
// network and becomes the address the engine connects to and logs, so it
// is checked here first.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rrl {

struct Address {
    std::string host;
    unsigned port;
};

// A host name or an IP address: 1 to RRL_HOST_MAX - 1 bytes of printable
// ASCII without blanks or brackets, and not "?" (Redis' "no endpoint").
bool host_valid(std::string_view host);

// 1 to 5 decimal digits, nothing else (no sign, no blanks).
std::optional<unsigned> parse_small_decimal(std::string_view text);

// A TCP port: 1 to 5 decimal digits, 1..65535.
std::optional<unsigned> parse_port(std::string_view text);

// "host:port" with the port after the last ':', so that an IPv6 address
// needs no brackets ("::1:7000"); "[::1]:7000" loses its brackets.
std::optional<Address> parse_host_port(std::string_view text);

}  // namespace rrl
