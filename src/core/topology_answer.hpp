// Why a reply to a topology question (CLUSTER SLOTS, SENTINEL
// get-master-addr-by-name) is of no use, as the shim logs it: no reply, an
// error reply (its text escaped: a hostile server forges no log line), or
// not the shape asked for. topology.hpp parses the replies that may be
// answers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rrl.h"

namespace rrl {

// "failed: ..." for no reply (nullptr), an error reply, or (array) a reply
// that is not an array; nullopt when the reply may be an answer.
std::optional<std::string> answer_failure(const rrl_value_t* reply, bool array);

// A sentinel that does not know the name of the primary asked for.
std::string answer_unknown(std::string_view name);

}  // namespace rrl
