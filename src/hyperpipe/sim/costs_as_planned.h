// What a plan fixes for the whole run, in the cost model's terms: the one place plan-wide
// settings (and the framework meant to run the plan) become cost settings, for the
// planner's candidates, the simulator and the re-planner alike.
#pragma once

#include "hyperpipe/cost/cost_options.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::sim {

// How `framework` reduces gradients (a reduce-scatter, or an all-reduce) and the buffers
// it holds, into `options`.
void cost_as_framework_runs(plan::Framework framework, cost::CostOptions& options);

// `base` (the caller's estimator and the rest) with what `plan` fixes: its framework's
// part (above), its gradient-reduce dtype and memory margin, and sequence parallelism and
// the sharded optimizer where the plan runs them or `base` already costs them so (a
// planner costs its candidates so before it stamps the plan it picks).
cost::CostOptions costs_as_planned(const plan::Plan& plan, cost::CostOptions base = {});

}  // namespace hyperpipe::sim
