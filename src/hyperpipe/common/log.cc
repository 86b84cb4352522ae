#include "hyperpipe/common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace hyperpipe {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto created = spdlog::stderr_color_mt("hyperpipe");
    created->set_pattern("[%l] %v");
    created->set_level(spdlog::level::warn);
    return created;
  }();
  return *logger;
}

bool set_log_level(const std::string& level_name) {
  const auto level = spdlog::level::from_str(level_name);
  // from_str answers "off" for names it does not know; accept "off" only when asked for.
  if (level == spdlog::level::off && level_name != "off") return false;
  log().set_level(level);
  return true;
}

}  // namespace hyperpipe
