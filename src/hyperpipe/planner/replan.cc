#include "hyperpipe/planner/replan.h"

#include <chrono>

#include "hyperpipe/cluster/device_subset.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

// What the previous plan fixed for the whole run, in the cost model's terms.
cost::CostOptions costs_as_planned(const plan::Plan& previous) {
  cost::CostOptions options;
  options.sequence_parallel = previous.sequence_parallel;
  options.gradient_reduce_dtype = previous.gradient_reduce_dtype;
  options.shard_optimizer = previous.shard_optimizer;
  options.reduce_scatter_gradients = plan::traits(previous.runtime).reduce_scatters_gradients;
  return options;
}

}  // namespace

Replanned replan(const plan::Plan& previous, const model::Model& model,
                 const cluster::Cluster& whole, const std::vector<int>& devices,
                 const cost::ProfileDb* profiles) {
  const auto began = std::chrono::steady_clock::now();
  const cluster::DeviceSubset subset = cluster::keep_devices(whole, devices);
  const cost::CostOptions options = costs_as_planned(previous);
  const cost::CostModel costs(model, subset.cluster, options, profiles);
  PlanRequest request;
  const int64_t global_batch = previous.global_batch();
  request.batch = {previous.model, previous.cluster, global_batch, previous.seq_len,
                   micro_batch_sizes(global_batch)};
  restrict_to_framework(previous.runtime, request);
  PlanResult result = make_plan(costs, request);

  plan::Plan plan = std::move(result.best.plan);
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    for (auto& stage : plan.pipeline(p).stages) {
      for (int& device : stage.devices) device = subset.original.at(static_cast<size_t>(device));
    }
  }
  plan.sequence_parallel = previous.sequence_parallel;
  plan.gradient_reduce_dtype = previous.gradient_reduce_dtype;
  plan.shard_optimizer = false;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    for (const auto& stage : plan.pipeline(p).stages) {
      if (stage.dp > 1) plan.shard_optimizer = previous.shard_optimizer;
    }
  }
  const cost::CostModel whole_costs(model, whole, options, profiles);
  Replanned replanned{score_plan(whole_costs, std::move(plan), result.best.label), 0};
  replanned.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return replanned;
}

}  // namespace hyperpipe::planner
