#include "hyperpipe/planner/scored_plan.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {

ScoredPlan score_plan(const cost::CostModel& costs, plan::Plan plan, std::string label) {
  ScoredPlan scored;
  scored.label = std::move(label);
  scored.simulation = sim::simulate_plan(costs, plan);
  scored.plan = std::move(plan);
  scored.fits = true;
  const auto& ranks = scored.simulation.output.ranks;
  for (size_t r = 0; r < ranks.size(); ++r) {
    scored.fits = scored.fits && ranks[r].peak_memory_bytes <= scored.simulation.memory_capacity[r];
  }
  return scored;
}

bool preferred(const ScoredPlan& a, const ScoredPlan& b) {
  if (a.fits != b.fits) return a.fits;
  return a.iteration_time() < b.iteration_time();
}

ScoredPlan best_schedule(const cost::CostModel& costs, const plan::Plan& plan,
                         const std::string& label) {
  plan::Plan variant = plan;
  variant.schedule = schedule::ScheduleKind::one_f_one_b;
  variant.warmup.clear();
  ScoredPlan best = score_plan(costs, variant, label);
  if (plan.chunks != 1) return best;

  // Link-aware warm-up: deeper in front of slow links, as far as memory allows.
  const auto& sim = best.simulation;
  const int ranks = plan.ranks();
  std::vector<double> rank_time;
  std::vector<int> max_in_flight;
  for (int r = 0; r < ranks; ++r) {
    const auto& stage = sim.stages[r];
    rank_time.push_back(stage.compute.total());
    const double spare = sim.memory_capacity[r] - stage.memory.reserved - stage.memory.weights -
                         stage.memory.gradients - stage.memory.optimizer;
    const double per_micro_batch = std::max(stage.memory.activations, 1.0);
    max_in_flight.push_back(
        std::max(1, static_cast<int>(std::min(1e6, std::floor(spare / per_micro_batch)))));
  }
  const auto depths =
      schedule::link_aware_warmup(rank_time, sim.activation_transfer, max_in_flight);
  std::vector<int> one_f_one_b;
  for (int r = 0; r < ranks; ++r) one_f_one_b.push_back(std::min(ranks - r, max_in_flight[r]));
  if (depths != one_f_one_b) {
    variant.schedule = schedule::ScheduleKind::hetero_1f1b;
    variant.warmup = depths;
    ScoredPlan hetero = score_plan(costs, variant, label);
    if (preferred(hetero, best)) best = std::move(hetero);
  }
  variant.schedule = schedule::ScheduleKind::zb_h1;
  variant.warmup.clear();
  ScoredPlan zero_bubble = score_plan(costs, variant, label);
  if (preferred(zero_bubble, best)) best = std::move(zero_bubble);
  return best;
}

}  // namespace hyperpipe::planner
