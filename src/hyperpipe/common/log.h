// The one logger of the library. Library code logs through it and never prints.
#pragma once

#include <spdlog/spdlog.h>

namespace hyperpipe {

// The process-wide logger (writes to stderr, so stdout stays clean for tables and JSON).
spdlog::logger& log();

// "trace", "debug", "info", "warn", "error", "off"; returns false for an unknown name.
bool set_log_level(const std::string& level_name);

}  // namespace hyperpipe
