// The body of a rejection as application/problem+json (RFC 9457), of the
// quota-exceeded type of draft-ietf-httpapi-ratelimit-headers:
//
//   {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//    "title":"Request cannot be satisfied as assigned quota has been
//    exceeded","status":429,"violated-policies":["per_ip"]}
//
// on one line, with a final newline; the policies are the zones of the
// limits that rejected, in the request's order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rrl {

std::string json_string(std::string_view s);

// The body of a rejection of this status, naming zones: those of the
// limits that rejected (shown_problem()).
std::string problem_json(unsigned status,
                         const std::vector<std::string_view>& zones);

}  // namespace rrl
