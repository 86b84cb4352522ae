#include "hyperpipe/sim/memory_verdict.h"

#include <fmt/format.h>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::sim {

std::string OverCapacity::text() const {
  std::string why = breaking.empty()
                        ? fmt::format("no one term decides it; the largest is {}", largest)
                        : fmt::format("{} ({}) breaks it", breaking, format_bytes(breaking_bytes));
  return fmt::format("{} needs {}, {} over the {} a plan may use of its {} ({})", track,
                     format_bytes(peak), format_bytes(over()), format_bytes(limit),
                     format_bytes(capacity), why);
}

std::vector<OverCapacity> over_capacity(const PlanSimulation& simulation) {
  std::vector<OverCapacity> result;
  const auto& ranks = simulation.output.ranks;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double peak = ranks[r].peak_memory_bytes;
    const double limit = simulation.memory_limit[r];
    if (peak <= limit) continue;
    OverCapacity over;
    over.rank = static_cast<int>(r);
    over.track = track_name(simulation, over.rank);
    over.peak = peak;
    over.limit = limit;
    over.capacity = simulation.memory_capacity[r];
    double largest = -1;
    for (const auto& term : simulation.device_peaks[r].terms()) {
      if (term.bytes > largest) {
        largest = term.bytes;
        over.largest = term.name;
      }
      // The allocator's share scales with what it holds; leaving a term out leaves out
      // its share too.
      const bool held_by_allocator = term.name != "communicators" && term.name != "context" &&
                                     term.name != "allocator" && term.name != "reserved" &&
                                     term.name != "stream_pools";
      const double freed =
          term.bytes * (held_by_allocator ? simulation.device_peaks[r].allocator_ratio : 1.0);
      if (term.bytes > 0 && freed >= over.over() &&
          (over.breaking.empty() || term.bytes < over.breaking_bytes)) {
        over.breaking = term.name;
        over.breaking_bytes = term.bytes;
      }
    }
    result.push_back(over);
  }
  return result;
}

}  // namespace hyperpipe::sim
