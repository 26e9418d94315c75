#include "decide/problem.hpp"

namespace rrl {

std::string json_string(std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += ch;
        }
    }
    out += '"';
    return out;
}

std::string problem_json(unsigned status,
                         const std::vector<std::string_view>& zones) {
    std::string out =
        "{\"type\":\"https://iana.org/assignments/http-problem-types"
        "#quota-exceeded\","
        "\"title\":\"Request cannot be satisfied as assigned quota has been "
        "exceeded\","
        "\"status\":" +
        std::to_string(status) + ",\"violated-policies\":[";
    for (std::size_t i = 0; i < zones.size(); i++) {
        if (i > 0) out += ',';
        out += json_string(zones[i]);
    }
    out += "]}\n";
    return out;
}

}  // namespace rrl
