// The summaries of timed samples the runtime, the replay and the benches report.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hyperpipe {

// The upper median of a non-empty sample: robust to a stray slow one on a shared machine.
inline double median(std::vector<double> values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

inline double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace hyperpipe
