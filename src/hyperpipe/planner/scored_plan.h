// A plan together with its simulation: how the planner compares candidates, searched or
// baseline, by one yardstick.
#pragma once

#include <optional>
#include <string>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::planner {

// Model chunks per device group tried for the interleaved schedule: Narayanan et al.
// (SC'21) find two or four chunks best; more multiply the point-to-point traffic.
inline constexpr int kInterleaveChunks[] = {2, 4};

// The same device groups, each holding its layers as `chunks` chunks: stage c·S + r of the
// result is chunk c of group r, so every group keeps as many layers as before. nullopt when
// a group has fewer layers than chunks.
std::optional<plan::Pipeline> interleave(const plan::Pipeline& pipeline, int chunks);

struct ScoredPlan {
  std::string label;  // "searched", "uniform", "A100-40GB@ampere → V100-16GB@legacy", …
  plan::Plan plan;
  sim::PlanSimulation simulation;
  double estimate = 0;  // the search's objective (searched plans only)
  bool fits = false;    // every device group within its memory

  double iteration_time() const { return simulation.output.iteration_time; }
};

// Whether each of the plan's schedules stays within kMaxScheduleOps (limits.h), so
// simulating it fits in memory.
bool simulatable(const plan::Plan& plan);

ScoredPlan score_plan(const cost::CostModel& costs, plan::Plan plan, std::string label);

// The plan under each schedule that keeps each device group's layers (1F1B, the
// heterogeneity-aware 1F1B with link-aware warm-up depths within memory, ZB-H1, and
// interleaved 1F1B with each group's layers cut into kInterleaveChunks chunks); the
// fastest that fits, or the 1F1B one if none fits. With several pipelines, each one's
// schedule is chosen in turn, the others fixed. Pipelines already interleaved keep theirs.
ScoredPlan best_schedule(const cost::CostModel& costs, const plan::Plan& plan,
                         const std::string& label);

// True when `a` should be preferred: it fits and `b` does not, or both fit (or neither)
// and `a` is faster.
bool preferred(const ScoredPlan& a, const ScoredPlan& b);

}  // namespace hyperpipe::planner
