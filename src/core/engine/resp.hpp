// Commands in RESP, the Redis protocol, as hiredis formats them: an array
// of bulk strings, "*<n>\r\n" then "$<len>\r\n<bytes>\r\n" for each.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rrl {

void resp_array(std::string& out, std::size_t n);

void resp_bulk(std::string& out, std::string_view bytes);

void resp_bulk(std::string& out, std::size_t number);

// A whole command of argv.
std::string resp_command(const std::vector<std::string_view>& argv);

}  // namespace rrl
