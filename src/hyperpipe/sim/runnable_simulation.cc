#include "hyperpipe/sim/runnable_simulation.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/plan/framework.h"
#include "hyperpipe/sim/simulator.h"

namespace hyperpipe::sim {

void run_with(plan::Plan& plan, plan::Framework framework, const std::string& source) {
  if (const auto refused = plan::refusal(plan, framework)) {
    throw InputError("--runtime", std::string(plan::to_string(framework)),
                     fmt::format("a framework that can run {} ({}: {})", source, refused->field,
                                 refused->reason));
  }
  plan.runtime = framework;
}

PlanSimulation simulate_runnable(const cost::CostModel& costs, const plan::Plan& plan,
                                 const SimOptions& options) {
  const bool blocking = options.p2p ? *options.p2p == P2pMode::blocking : plan::blocks_on_p2p(plan);
  try {
    return simulate_plan(costs, plan, options);
  } catch (const SimulationStuck& stuck) {
    if (!blocking) throw;
    // Matched blocking sends deadlock on some orders (neighbours sending to each other
    // other than as a send-then-receive pair): such a framework could not run this plan.
    const bool asked = options.p2p.has_value();
    throw InputError(asked ? "--p2p" : "runtime",
                     asked ? "blocking" : std::string(plan::to_string(plan.runtime)),
                     fmt::format("a schedule whose exchanges can block without deadlock: {} "
                                 "(use --p2p async, or another schedule)",
                                 stuck.what()));
  }
}

}  // namespace hyperpipe::sim
