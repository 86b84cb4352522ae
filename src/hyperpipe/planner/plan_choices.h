// What a user fixes and allows when asking for a plan (`hyperpipe plan`'s flags; the
// Python module's keywords reach them), checked and made the planning call they ask for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/cost_options.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/framework.h"
#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/plan_space.h"
#include "hyperpipe/planner/sharded_planning.h"

namespace hyperpipe::planner {

struct PlanChoices {
  // As the plan names them (plan::reference_beside), and the cluster as given, for messages.
  std::string model_reference;
  std::string cluster_reference;
  std::string cluster_argument;
  int64_t global_batch = 0;
  int64_t seq_len = 0;                 // 0: the model's
  std::optional<int64_t> micro_batch;  // unset: every divisor of the global batch searched
  // What the user fixed (tp, dp, stages, recompute) and the limits they set (max_stages,
  // max_tp, same_dp, schedules); micro_batch comes from the field above, and the framework
  // restricts the rest (restrict_to_framework).
  PlanSpace space;
  bool dtype_given = false;  // the model is in the dtype asked for: the plan records it
  bool sequence_parallel = false;
  plan::Framework runtime = plan::Framework::hyperpipe;
  std::string shard_optimizer = "auto";  // auto, on, off (optimizer_shardings)
  bool explain = false;                  // every stage order, and the peers' spaces
  std::optional<double> memory_margin;   // a share of each device's memory
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  std::optional<Baseline> baseline;  // instead of the search
  std::string baseline_name;         // as asked, for messages
};

// The planning call `choices` ask for, of `model` (in the dtype it trains in) on `cluster`.
// Throws InputError naming the flag at fault: a global batch that is not positive, a
// sequence longer than a GPT model's learned positions, a micro-batch that does not divide
// the global batch, more micro-batches per iteration than kMaxMicroBatches.
ShardedPlanning planning_of(const PlanChoices& choices, const model::Model& model,
                            const cluster::Cluster& cluster, const cost::ProfileDb* profiles);

}  // namespace hyperpipe::planner
