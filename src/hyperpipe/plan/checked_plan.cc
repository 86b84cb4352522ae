#include "hyperpipe/plan/checked_plan.h"

#include <fmt/format.h>

#include <filesystem>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"

namespace hyperpipe::plan {

namespace {

// Loads what a plan's `field` names with `load`; where nothing by that name exists (the
// loaders blame their option, `flag`, which the user of a plan never passed), the error
// names the plan file and field and where the reference was looked for.
template <typename Load>
auto load_referenced(const std::string& plan_path, const char* field, const char* flag,
                     const std::string& reference, const Load& load) {
  try {
    return load(resolve_reference(plan_path, reference));
  } catch (const InputError& error) {
    if (error.source() != flag) throw;  // the file exists: its own error names it
    const auto beside =
        std::filesystem::absolute(std::filesystem::path(plan_path).parent_path() / reference)
            .lexically_normal();
    throw InputError(
        plan_path, fmt::format("field '{}'", field),
        fmt::format("'{}' is {}; a relative path is looked for beside the plan ({}) and then from "
                    "the working directory ({})",
                    reference, error.expected(), beside.string(),
                    std::filesystem::absolute(reference).lexically_normal().string()));
  }
}

}  // namespace

CheckedPlan load_checked_plan(const std::string& path, const std::optional<std::string>& cluster) {
  Plan plan = load_plan(path);
  model::Model model = load_referenced(path, "model", "--model", plan.model, model::load_model);
  // Costed, simulated and trained in the plan's precision, not the model file's.
  if (plan.dtype) model = model.in_dtype(*plan.dtype);
  cluster::Cluster loaded =
      cluster
          ? cluster::load_cluster(*cluster)
          : load_referenced(path, "cluster", "--cluster", plan.cluster,
                            [](const std::string& name) { return cluster::load_cluster(name); });
  check_plan(plan, model, loaded, path);
  return {std::move(plan), std::move(model), std::move(loaded)};
}

}  // namespace hyperpipe::plan
