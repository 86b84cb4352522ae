#include "hyperpipe/planner/scored_plan.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/common/limits.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {

bool simulatable(const plan::Plan& plan) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    // About three ops (F, B or BW, a transfer) per stage and micro-batch.
    const auto& pipeline = plan.pipeline(p);
    if (int64_t{3} * static_cast<int64_t>(pipeline.stages.size()) * pipeline.micro_batches >
        kMaxScheduleOps) {
      return false;
    }
  }
  return true;
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

std::optional<plan::Pipeline> interleave(const plan::Pipeline& plan, int chunks) {
  const int groups = static_cast<int>(plan.stages.size());
  if (plan.chunks != 1 || chunks < 2 || groups < 2) return std::nullopt;
  // Layers of chunk c of group r: the group's layers split as evenly as possible.
  std::vector<std::vector<int>> sizes(groups);
  for (int r = 0; r < groups; ++r) {
    const int layers = plan.stages[r].end_layer - plan.stages[r].first_layer;
    if (layers < chunks) return std::nullopt;
    for (int c = 0; c < chunks; ++c) sizes[r].push_back(layers / chunks + (c < layers % chunks));
  }
  plan::Pipeline result = plan;
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

namespace {

// Tries the schedules for pipeline p of `best`'s plan, keeping whichever is preferred.
void improve_schedule(const cost::CostModel& costs, int p, ScoredPlan& best) {
  const plan::Pipeline original = best.plan.pipeline(p);
  if (original.chunks != 1) return;
  const auto try_variant = [&](plan::Pipeline variant) {
    plan::Plan candidate = best.plan;
    candidate.pipeline(p) = std::move(variant);
    if (!simulatable(candidate)) return;
    ScoredPlan scored = score_plan(costs, std::move(candidate), best.label);
    if (preferred(scored, best)) best = std::move(scored);
  };

  // Link-aware warm-up: deeper in front of slow links, as far as memory allows.
  const auto& sim = best.simulation;
  const auto stages = sim.pipeline_stages(p);
  const int ranks = original.ranks();
  std::vector<double> rank_time;
  std::vector<double> transfer;
  std::vector<int> max_in_flight;
  for (int r = 0; r < ranks; ++r) {
    const auto& stage = *stages[r];
    rank_time.push_back(stage.compute.total());
    if (r + 1 < ranks) transfer.push_back(stage.activation_transfer);
    const double spare = sim.memory_capacity[sim.first_rank[p] + r] - stage.memory.reserved -
                         stage.memory.weights - stage.memory.gradients - stage.memory.optimizer;
    const double per_micro_batch = std::max(stage.memory.activations, 1.0);
    max_in_flight.push_back(
        std::max(1, static_cast<int>(std::min(1e6, std::floor(spare / per_micro_batch)))));
  }
  const auto depths = schedule::link_aware_warmup(rank_time, transfer, max_in_flight);
  std::vector<int> one_f_one_b;
  one_f_one_b.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) one_f_one_b.push_back(std::min(ranks - r, max_in_flight[r]));
  plan::Pipeline variant = original;
  if (depths != one_f_one_b) {
    variant.schedule = schedule::ScheduleKind::hetero_1f1b;
    variant.warmup = depths;
    try_variant(variant);
  }
  variant.schedule = schedule::ScheduleKind::zb_h1;
  variant.warmup.clear();
  try_variant(variant);
  for (int chunks : kInterleaveChunks) {
    if (auto interleaved = interleave(original, chunks)) try_variant(*interleaved);
  }
}

}  // namespace

ScoredPlan best_schedule(const cost::CostModel& costs, const plan::Plan& plan,
                         const std::string& label) {
  plan::Plan start = plan;
  for (int p = 0; p < start.pipeline_count(); ++p) {
    auto& pipeline = start.pipeline(p);
    if (pipeline.chunks != 1) continue;
    pipeline.schedule = schedule::ScheduleKind::one_f_one_b;
    pipeline.warmup.clear();
  }
  ScoredPlan best = score_plan(costs, std::move(start), label);
  for (int p = 0; p < plan.pipeline_count(); ++p) improve_schedule(costs, p, best);
  // Each chunk's all-reduce beside the backward left: kept where the simulator says it
  // pays (the runtime runs it as planned).
  if (!best.plan.overlap_allreduce) {
    plan::Plan overlapped = best.plan;
    overlapped.overlap_allreduce = true;
    ScoredPlan candidate = score_plan(costs, std::move(overlapped), best.label);
    if (preferred(candidate, best)) best = std::move(candidate);
  }
  return best;
}

}  // namespace hyperpipe::planner
