// Logging from the core goes through a callback set by the host (the
// nginx shim), so the core never depends on nginx's logger.
#pragma once

#include <string>

namespace rrl {

enum class LogLevel { error = 0, warn = 1, info = 2, failure = 3 };

void log(LogLevel level, const std::string& message) noexcept;

}  // namespace rrl
