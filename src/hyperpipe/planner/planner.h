// The heterogeneity-aware planner: the fastest plan that fits, its runners-up per stage
// order, and the baselines, all scored by the simulator.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

// Micro-batches larger than this are not tried: beyond it activation memory grows
// while the pipeline bubble no longer shrinks (Narayanan et al., SC'21, §3.3 find
// small micro-batches best for large models).
inline constexpr int64_t kMaxMicroBatch = 32;
// Candidates from the search re-scored by the simulator (DESIGN: "the few best").
inline constexpr int kRescoredCandidates = 3;

struct PlanRequest {
  BatchSettings batch;
  int max_stages = 32;
  // Tensor parallelism at most this (1 for plans the runtime is to run: it has no tp yet).
  int max_tp = std::numeric_limits<int>::max();
  // Search every stage order to its best (for --explain) instead of pruning orders that
  // cannot win.
  bool every_order = false;
  // Also try pipelines of different composition side by side (replica_search.h).
  bool replicas = true;
};

struct PlanResult {
  ScoredPlan best;
  // The best searched plan of each class order (every order when every_order was asked,
  // otherwise those that came close enough not to be pruned), then the best plan of each
  // split of the classes into pipelines of different composition.
  std::vector<ScoredPlan> per_order;
  std::vector<ScoredPlan> baselines;
  double search_seconds = 0;   // the stage-construction search alone
  double replica_seconds = 0;  // the search over pipelines of different composition
};

// Throws InputError (naming --model and --cluster) with the numbers when nothing fits.
PlanResult make_plan(const cost::CostModel& costs, const PlanRequest& request);

// Why nothing fits, in numbers: the model's static memory, the least share per device
// over as many stages and as much tensor parallelism as the cluster allows, the largest
// layer, and the largest device.
std::string infeasibility_reason(const cost::CostModel& costs, const PlanRequest& request);

}  // namespace hyperpipe::planner
