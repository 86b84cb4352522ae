#include "hyperpipe/trace/timeline.h"

#include <algorithm>

namespace hyperpipe::trace {

double Timeline::end_time() const {
  double end = 0;
  for (const auto& track : tracks) {
    for (const auto& interval : track.compute) end = std::max(end, interval.end);
    for (const auto& interval : track.communication) end = std::max(end, interval.end);
  }
  return end;
}

}  // namespace hyperpipe::trace
