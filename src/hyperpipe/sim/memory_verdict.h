// Whether a simulated plan fits its devices, and where it does not: the rank, by how much,
// and the term that breaks it.
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::sim {

struct OverCapacity {
  int rank = 0;         // over all pipelines, as output.ranks counts
  std::string track;    // "stage 2: A100-40GB ×2 [4-5]"
  double peak = 0;      // predicted device peak, bytes
  double limit = 0;     // what a plan may use: the device's memory less the margin
  double capacity = 0;  // the device's memory
  std::string largest;  // the largest term
  // The smallest term whose absence would let it fit; empty when no one term would.
  std::string breaking;
  double breaking_bytes = 0;

  double over() const { return peak - limit; }
  // One sentence: which stage, how much over, which term breaks it.
  std::string text() const;
};

// The ranks whose predicted peak exceeds their limit, in rank order.
std::vector<OverCapacity> over_capacity(const PlanSimulation& simulation);

}  // namespace hyperpipe::sim
