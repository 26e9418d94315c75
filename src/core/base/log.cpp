#include "base/log.hpp"

#include "base/rrl_types.h"

namespace {

rrl_log_pt log_handler = nullptr;
void* log_data = nullptr;

}  // namespace

namespace rrl {

void log(LogLevel level, const std::string& message) noexcept {
    if (log_handler != nullptr) {
        log_handler(log_data, static_cast<int>(level), message.c_str());
    }
}

void set_logger(rrl_log_pt handler, void* data) noexcept {
    log_handler = handler;
    log_data = data;
}

}  // namespace rrl
