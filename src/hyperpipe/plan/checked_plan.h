// A plan file with the model and cluster it names, loaded and checked against each other:
// what `simulate`, `compare --plan` and `train` start from.
#pragma once

#include <optional>
#include <string>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {

struct CheckedPlan {
  Plan plan;
  model::Model model;
  cluster::Cluster cluster;
};

// `cluster`: a built-in name or file to use instead of the one the plan names. The model
// is in the plan's `dtype` where it sets one. Throws InputError naming the file at fault
// (plan_checks.h).
CheckedPlan load_checked_plan(const std::string& path,
                              const std::optional<std::string>& cluster = std::nullopt);

}  // namespace hyperpipe::plan
