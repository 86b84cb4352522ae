// One planning call as `hyperpipe plan` makes it: the best plan under each sharding of the
// optimizer asked for (optimizer_shardings), searched side by side, each with its own cost
// model; or a baseline's best layout in place of the search.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {

struct ShardedPlanning {
  const model::Model* model = nullptr;  // as it trains (its dtype)
  const cluster::Cluster* cluster = nullptr;
  cost::CostOptions options;  // shard_optimizer aside: each search sets its own
  const cost::ProfileDb* profiles = nullptr;
  PlanRequest request;               // its progress aside: `progress` gives each search's
  std::vector<bool> shardings;       // optimizer_shardings'
  std::optional<Baseline> baseline;  // instead of the search: the baseline's best layout
  std::string baseline_name;         // as asked (--baseline), for the messages
  std::string cluster_argument;      // as given (--cluster), for the messages
  // What the plan records of how it was costed (a plan-wide setting given, not defaulted).
  bool records_dtype = false;
  bool records_memory_margin = false;
};

// The plan chosen, and the search's result (none for a baseline).
struct Planned {
  ScoredPlan chosen;
  std::optional<PlanResult> result;
};

// Each sharding's plan, side by side (`progress(i)`: the callback of the i-th search);
// the faster where several fit (the first where they tie), the one that fits where only one
// does. Throws the InputError of a search when none fits.
Planned plan_sharded(const ShardedPlanning& planning,
                     const std::function<PlanProgressCallback(int index)>& progress);

// Of searches that each found a plan (or nothing, `found` empty), the one to keep: the
// fastest, the first where they tie; nothing when none found one.
std::optional<size_t> fastest_found(const std::vector<std::optional<double>>& iterations);

}  // namespace hyperpipe::planner
