#include "hyperpipe/planner/scored_plan.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/common/limits.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {

bool simulatable(const plan::Plan& plan) {
  // About three ops (F, B or BW, a transfer) per stage and micro-batch.
  return int64_t{3} * static_cast<int64_t>(plan.stages.size()) * plan.micro_batches <=
         kMaxScheduleOps;
}

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

std::optional<plan::Plan> interleave(const plan::Plan& plan, int chunks) {
  const int groups = static_cast<int>(plan.stages.size());
  if (plan.chunks != 1 || chunks < 2 || groups < 2) return std::nullopt;
  // Layers of chunk c of group r: the group's layers split as evenly as possible.
  std::vector<std::vector<int>> sizes(groups);
  for (int r = 0; r < groups; ++r) {
    const int layers = plan.stages[r].end_layer - plan.stages[r].first_layer;
    if (layers < chunks) return std::nullopt;
    for (int c = 0; c < chunks; ++c) sizes[r].push_back(layers / chunks + (c < layers % chunks));
  }
  plan::Plan result = plan;
  result.schedule = schedule::ScheduleKind::interleaved;
  result.chunks = chunks;
  result.warmup.clear();
  result.stages.clear();
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    for (int r = 0; r < groups; ++r) {
      plan::StagePlan stage = plan.stages[r];
      stage.first_layer = first;
      stage.end_layer = first + sizes[r][c];
      first = stage.end_layer;
      result.stages.push_back(stage);
    }
  }
  return result;
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
  for (int chunks : kInterleaveChunks) {
    if (auto interleaved = interleave(plan, chunks)) {
      if (!simulatable(*interleaved)) continue;
      ScoredPlan scored = score_plan(costs, *interleaved, label);
      if (preferred(scored, best)) best = std::move(scored);
    }
  }
  return best;
}

}  // namespace hyperpipe::planner
