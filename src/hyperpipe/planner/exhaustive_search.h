// The judge of the planner: every plan of the plan space (plan_space.h), each simulated,
// the fastest that fits kept. Exact, and slow: for tests and bench/planner_optimality on
// mid-size instances, never for `hyperpipe plan`.
//
// Plans are enumerated as the space defines them: every micro-batch size, every class
// order, every sequence of (class, shape) device groups that packs into the nodes, every
// contiguous layer split, then every schedule variant with the all-reduce overlapped or not
// (best_schedule). Nothing is coarsened beyond the space's own definition; what keeps it
// tractable are bounds that are admissible against the simulator, so no plan that could
// beat the best found is skipped:
//   * a device group runs m micro-batches' forward and backward one after another on one
//     stream and its optimizer step after them, so the iteration is at least m · τ_s + O_s
//     for every stage s; a stage range where that reaches the incumbent is not extended
//     further (more layers only add time);
//   * the layers not yet placed need, at their cheapest device-time per layer (time × GPUs
//     over every shape of the classes left), at least that work spread over the devices
//     left, and the slowest stage at least the average;
//   * a complete layout, and each of its schedule variants, is simulated only when its
//     iteration_lower_bound (scored_plan.h: start delay, compute, all-reduce, optimizer)
//     is below the incumbent.
// A hetero-1F1B variant takes the warm-up depths schedule_variants derives for the layout.
// The planner's refinement keeps a plan's depths when it moves layers or merges groups
// (local_refinement.h), so the planner can return a plan with depths the judge never
// tries: the judge's best then bounds what the planner misses, never what it finds.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/plan_space.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

struct ExhaustiveOptions {
  BatchSettings batch;  // micro_batch_sizes: those enumerated
  PlanSpace space;
  // A known plan's iteration (e.g. the planner's): plans the bounds show cannot beat it
  // are not simulated. Infinity: no such plan.
  double incumbent = std::numeric_limits<double>::infinity();
  // Turn the bounds off (to check them: the best must not change).
  bool prune = true;
  // Stop after this many seconds (0: never); the result then says it is incomplete.
  double time_limit_s = 0;
};

struct ExhaustiveResult {
  std::optional<ScoredPlan> best;  // the fastest plan that fits, if any fits
  int64_t layouts = 0;             // stage layouts simulated (each under every schedule)
  int64_t bounded = 0;             // layouts iteration_lower_bound showed cannot win
  int64_t unpackable = 0;          // layouts whose groups do not pack into the nodes
  // The largest iteration_lower_bound over the plans kept, divided by their simulated
  // iteration: how close the bound comes (1 = exact), and a check that it never exceeds it.
  double bound_ratio_max = 0;
  double seconds = 0;
  bool complete = true;  // false when the time limit stopped the enumeration
};

ExhaustiveResult exhaustive_search(const cost::CostModel& costs, const ExhaustiveOptions& options);

}  // namespace hyperpipe::planner
