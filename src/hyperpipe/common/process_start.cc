#include "hyperpipe/common/process_start.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace hyperpipe {

std::optional<double> process_start_time() {
  // proc(5): field 22 of /proc/self/stat is the start in clock ticks after boot; the
  // fields after the command name (field 2, in parentheses, which may hold spaces) are
  // space-separated.
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  constexpr int kStartTimeField = 22;
  constexpr int kFirstFieldAfterName = 3;
  for (int f = kFirstFieldAfterName; f <= kStartTimeField; ++f) {
    if (!(fields >> field)) return std::nullopt;
  }
  char* end = nullptr;
  const double ticks = std::strtod(field.c_str(), &end);
  if (end == field.c_str() || *end != '\0') return std::nullopt;
  // Its age, from /proc/uptime (seconds since boot, to the hundredth, on the same
  // clock as the start), taken from the wall clock now.
  std::ifstream uptime_file("/proc/uptime");
  double uptime = -1;
  uptime_file >> uptime;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (!uptime_file || uptime < 0 || ticks_per_second <= 0) return std::nullopt;
  const double age = uptime - ticks / static_cast<double>(ticks_per_second);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return now - age;
}

}  // namespace hyperpipe
