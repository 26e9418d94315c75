#include "engine/resp.hpp"

namespace rrl {

void resp_array(std::string& out, std::size_t n) {
    out += '*';
    out += std::to_string(n);
    out += "\r\n";
}

void resp_bulk(std::string& out, std::string_view bytes) {
    out += '$';
    out += std::to_string(bytes.size());
    out += "\r\n";
    out += bytes;
    out += "\r\n";
}

void resp_bulk(std::string& out, std::size_t number) {
    resp_bulk(out, std::string_view(std::to_string(number)));
}

std::string resp_command(const std::vector<std::string_view>& argv) {
    std::string out;
    resp_array(out, argv.size());
    for (std::string_view arg : argv) resp_bulk(out, arg);
    return out;
}

}  // namespace rrl
