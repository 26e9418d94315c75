// Logging from the core goes through a callback set by the host (the
// nginx shim), so the core never depends on nginx's logger.
#pragma once

#include <string>

#include "base/rrl_types.h"

namespace rrl {

enum class LogLevel { error = 0, warn = 1, info = 2, failure = 3 };

void log(LogLevel level, const std::string& message) noexcept;

// The host's callback (rrl_set_logger()); none: nothing is logged.
void set_logger(rrl_log_pt handler, void* data) noexcept;

}  // namespace rrl
