// A plan together with its simulation: how the planner compares candidates, searched or
// baseline, by one yardstick.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/plan_space.h"
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

// Whether the plan, scored, could not fit whatever its timing (sim::
// overflows_before_any_backward, with the recomputation score_plan gives it): the planner
// skips simulating it wherever a plan that fits is already in hand.
bool cannot_fit(const cost::CostModel& costs, plan::Plan plan);

// Whether each of the plan's schedules stays within kMaxScheduleOps (limits.h), so
// simulating it fits in memory.
bool simulatable(const plan::Plan& plan);

// What the calling thread has simulated through score_plan so far: the planner reports
// it per phase (PlanPhase).
struct SimulationTally {
  int64_t simulations = 0;
  int64_t simulated_ops = 0;
};
const SimulationTally& simulation_tally();

// The plan simulated for its figures: its tracks are named but hold no timeline (a
// caller that draws one simulates the plan itself).
ScoredPlan score_plan(const cost::CostModel& costs, plan::Plan plan, std::string label);

// Pipeline p of a plan scored under 1F1B, under each schedule of the space that keeps each
// device group's layers (plan_space.h): 1F1B, GPipe, ZB-H1, the heterogeneity-aware 1F1B
// with link-aware warm-up depths within memory (when they differ from 1F1B's), interleaved
// 1F1B with each group's layers cut into kInterleaveChunks chunks. Only the kinds `space`
// allows; a pipeline already interleaved is its own only variant.
std::vector<plan::Pipeline> schedule_variants(const ScoredPlan& scored, int p,
                                              const PlanSpace& space);

// A lower bound on the plan's simulated iteration, without simulating: every device group
// starts only when micro-batch 0 has come through the forwards of the groups before it,
// then runs m micro-batches' compute one op at a time, then its gradient all-reduce (it
// starts after the chunk's last weight gradient: for interleaved chunks at least the
// cheapest chunk's) and its optimizer step (after every all-reduce). Where every group
// ends with the last micro-batch's whole backward (GPipe, 1F1B, hetero-1F1B), that
// gradient then runs back through the groups before it, one backward and one transfer
// each, before the first group reduces and steps; and a group holding d micro-batches in
// flight takes at least one round trip through the groups after it per d micro-batches.
// The planner skips what it rules out, so it must never exceed the simulation
// (tests/planner/lower_bound_test.cc).
double iteration_lower_bound(const cost::CostModel& costs, const plan::Plan& plan);

// The plan under each schedule variant, its all-reduce overlapped or not: the fastest that
// fits, or the fastest if none fits; nullopt when the space allows no schedule for it.
// With several pipelines, each one's schedule is chosen in turn, the others fixed.
// Variants whose iteration_lower_bound reaches `skip_from` are not simulated.
std::optional<ScoredPlan> best_schedule(const cost::CostModel& costs, const plan::Plan& plan,
                                        const std::string& label, const PlanSpace& space = {},
                                        double skip_from = std::numeric_limits<double>::infinity());

// True when `a` should be preferred: it fits and `b` does not, or both fit (or neither)
// and `a` is faster.
bool preferred(const ScoredPlan& a, const ScoredPlan& b);

}  // namespace hyperpipe::planner
