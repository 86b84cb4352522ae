// What the planner would do instead of a run the user describes (`simulate --tp 2 --pp 4
// …`): its plan with the run's own shape kept, and its best plan, each against the run.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/planner/planner.h"
#include "hyperpipe/planner/run_shape.h"

namespace hyperpipe::report {

struct Alternative {
  std::string name;                           // "planner, your tp, pp and dp kept", "planner"
  std::optional<planner::ScoredPlan> scored;  // none: nothing of that kind fits
};

// The planner's plans for the run's model, cluster, global batch and framework, costed
// with `options` (the optimizer sharded as the framework does best): with the run's tp,
// pp, dp and micro-batch kept (layers, devices, schedule and recomputation searched), then
// with nothing kept.
std::vector<Alternative> planner_alternatives(const model::Model& model,
                                              const cluster::Cluster& cluster,
                                              const cost::CostOptions& options,
                                              const cost::ProfileDb* profiles,
                                              const planner::BatchSettings& batch,
                                              const planner::RunShape& run);

// A table: each alternative's stages, shape, micro-batch, schedule, iteration and how much
// faster than the run (`yours`, its iteration in seconds).
void print_alternatives(const std::vector<Alternative>& alternatives, double yours,
                        std::ostream& out);

nlohmann::json alternatives_json(const std::vector<Alternative>& alternatives, double yours);

}  // namespace hyperpipe::report
