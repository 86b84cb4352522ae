#include "hyperpipe/plan/checked_plan.h"

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"

namespace hyperpipe::plan {

CheckedPlan load_checked_plan(const std::string& path, const std::optional<std::string>& cluster) {
  Plan plan = load_plan(path);
  model::Model model = model::load_model(resolve_reference(path, plan.model));
  if (plan.dtype && *plan.dtype != model.config().dtype) {
    // Costed, simulated and trained in the plan's precision, not the model file's.
    auto config = model.config();
    config.dtype = *plan.dtype;
    model = model::Model(std::move(config));
  }
  cluster::Cluster loaded =
      cluster::load_cluster(cluster ? *cluster : resolve_reference(path, plan.cluster));
  check_plan(plan, model, loaded, path);
  return {std::move(plan), std::move(model), std::move(loaded)};
}

}  // namespace hyperpipe::plan
