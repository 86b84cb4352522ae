#include "hyperpipe/sim/costs_as_planned.h"

#include "hyperpipe/cost/device_memory.h"
#include "hyperpipe/plan/framework.h"

namespace hyperpipe::sim {

void cost_as_framework_runs(plan::Framework framework, cost::CostOptions& options) {
  options.reduce_scatter_gradients = plan::traits(framework).reduce_scatters_gradients;
  options.framework = cost::framework_buffers(plan::to_string(framework));
}

cost::CostOptions costs_as_planned(const plan::Plan& plan, cost::CostOptions base) {
  cost_as_framework_runs(plan.runtime, base);
  base.gradient_reduce_dtype = plan.gradient_reduce_dtype;
  base.sequence_parallel = plan.sequence_parallel || base.sequence_parallel;
  base.shard_optimizer = plan.shard_optimizer || base.shard_optimizer;
  if (plan.memory_margin) base.memory_margin = *plan.memory_margin;
  return base;
}

}  // namespace hyperpipe::sim
