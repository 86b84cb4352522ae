// A plan simulated as a framework would run it (`hyperpipe simulate --runtime`, `--p2p`):
// refused where that framework cannot express the plan, or where its blocking exchanges
// would deadlock on the plan's schedule.
#pragma once

#include <string>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::sim {

// The plan with `framework` as its runtime; InputError (naming --runtime and `source`, the
// plan as the user knows it) where that framework cannot express it (plan::refusal).
void run_with(plan::Plan& plan, plan::Framework framework, const std::string& source);

// simulate_plan; where the exchanges block (options.p2p asked so, else as the plan's runtime
// exchanges) and deadlock on the schedule, no such framework could run it: InputError
// naming --p2p, or the runtime.
PlanSimulation simulate_runnable(const cost::CostModel& costs, const plan::Plan& plan,
                                 const SimOptions& options);

}  // namespace hyperpipe::sim
