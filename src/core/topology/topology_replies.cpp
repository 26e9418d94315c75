#include "topology/topology_replies.hpp"

#include <bitset>
#include <string_view>
#include <utility>

#include "script/key.hpp"

namespace rrl {

namespace {

// Enough of a hostile host or error text to see what it was.
constexpr std::size_t shown_max = 64;

std::string_view text(const Value& v) {
    return v.str == nullptr ? std::string_view()
                            : std::string_view(v.str, v.len);
}

std::string shown(const Value& v) {
    return "\"" + printable(text(v), shown_max) + "\"";
}

bool is_array(const Value& v, std::size_t min_elements) {
    return v.type == kValueArray && v.nelements >= min_elements &&
           (v.nelements == 0 || v.elements != nullptr);
}

bool is_string(const Value& v) {
    return v.type == kValueString && (v.len == 0 || v.str != nullptr);
}

bool is_slot(const Value& v) {
    return v.type == kValueInteger && v.integer >= 0 &&
           v.integer < RRL_CLUSTER_SLOTS;
}

bool is_port(const Value& v) {
    return v.type == kValueInteger && v.integer >= 1 && v.integer <= 65535;
}

// A node of CLUSTER SLOTS: [host, port, id, metadata...]. Redis 7 sends a
// nil host (unknown-endpoint) or "?" (hostname, none set) when the client
// is to use the address it asked, as older ones did with "".
std::optional<Address> cluster_node(const Value& node, std::string* why) {
    if (!is_array(node, 2)) {
        *why = "primary is not [host, port, ...]";
        return std::nullopt;
    }
    const Value& host = node.elements[0];
    const Value& port = node.elements[1];
    Address a{};
    if (host.type == kValueNil ||
        (is_string(host) && (text(host).empty() || text(host) == "?"))) {
        a.host.clear();
    } else if (is_string(host) && host_valid(text(host))) {
        a.host = std::string(text(host));
    } else {
        *why = is_string(host) ? "bad host " + shown(host)
                               : "host is not a string";
        return std::nullopt;
    }
    if (!is_port(port)) {
        *why = port.type == kValueInteger
                   ? "bad port " + std::to_string(port.integer)
                   : "port is not an integer";
        return std::nullopt;
    }
    a.port = static_cast<unsigned>(port.integer);
    return a;
}

}  // namespace

std::optional<std::vector<SlotRange>> parse_cluster_slots(const Value& reply,
                                                          std::size_t max,
                                                          std::string* error) {
    auto fail = [error](std::string why) {
        if (error != nullptr) *error = std::move(why);
        return std::nullopt;
    };

    if (!is_array(reply, 0)) return fail("not an array");

    std::vector<SlotRange> ranges;
    std::bitset<RRL_CLUSTER_SLOTS> served;
    for (std::size_t i = 0; i < reply.nelements; i++) {
        const std::string where = "range " + std::to_string(i + 1) + ": ";
        const Value& entry = reply.elements[i];
        if (!is_array(entry, 3)) {
            return fail(where + "not [start, end, primary, ...]");
        }
        const Value& start = entry.elements[0];
        const Value& end = entry.elements[1];
        if (!is_slot(start) || !is_slot(end) || start.integer > end.integer) {
            return fail(where + "bad slots");
        }
        std::string why;
        std::optional<Address> primary = cluster_node(entry.elements[2], &why);
        if (!primary) return fail(where + why);

        // each slot is marked once: 16384 steps at most, whatever the reply
        for (long long s = start.integer; s <= end.integer; s++) {
            if (served[s]) {
                return fail(where + "slot " + std::to_string(s) +
                            " is in an earlier range too");
            }
            served[s] = true;
        }
        if (ranges.size() == max) {
            return fail("more than " + std::to_string(max) + " ranges");
        }
        ranges.push_back({static_cast<unsigned>(start.integer),
                          static_cast<unsigned>(end.integer),
                          std::move(*primary)});
    }
    return ranges;
}

std::optional<SentinelAnswer> parse_sentinel_primary(const Value& reply,
                                                     std::string* error) {
    auto fail = [error](std::string why) {
        if (error != nullptr) *error = std::move(why);
        return std::nullopt;
    };

    if (reply.type == kValueNil) return SentinelAnswer{false, {}};
    if (reply.type == kValueError) return fail("error " + shown(reply));
    if (!is_array(reply, 2) || reply.nelements != 2 ||
        !is_string(reply.elements[0]) || !is_string(reply.elements[1])) {
        return fail("not [host, port] as two strings");
    }
    const Value& host = reply.elements[0];
    const Value& port = reply.elements[1];
    if (!host_valid(text(host))) return fail("bad host " + shown(host));
    std::optional<unsigned> p = parse_port(text(port));
    if (!p) return fail("bad port " + shown(port));
    return SentinelAnswer{true, {std::string(text(host)), *p}};
}

}  // namespace rrl
