// The small helpers every timed part of the runtime (executor, profilers, bench) uses.
#pragma once

#include <chrono>

#include "hyperpipe/common/statistics.h"

namespace hyperpipe::runtime {

using hyperpipe::mean;
using hyperpipe::median;

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace hyperpipe::runtime
