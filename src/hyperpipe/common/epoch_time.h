// Wall-clock instants as the seconds since the Unix epoch that the run's JSON records and
// the elastic hosts' report files carry, and back.
#pragma once

#include <chrono>

namespace hyperpipe {

inline double epoch_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

inline std::chrono::system_clock::time_point from_epoch_seconds(double seconds) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(seconds)));
}

}  // namespace hyperpipe
