// The two small helpers every timed part of the runtime (executor, profilers, bench) uses.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace hyperpipe::runtime {

// The upper median: robust to a stray slow sample on a shared machine.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

inline double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace hyperpipe::runtime
