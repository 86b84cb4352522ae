// The last step of planning: the simulator's own neighbourhood search around a plan. The
// stage search ranks pipelines by an estimate that places no devices and sees neither the
// tied embedding's sum between the ends, nor how a tensor-parallel split meets its
// neighbours, nor the round trip over a slow link that 1F1B's few micro-batches in flight
// must wait for; the exhaustive judge (exhaustive_search.h) found plans a move or two away
// from the planner's that simulate faster. Each step tries, one at a time: every stage
// with another dp × tp split of the same devices, every stage at once with one tp,
// neighbouring stages trading device groups, the next smaller and larger micro-batch size
// (unless the space fixes it), and every stage boundary moved by one layer (the stages
// touched then with the least recomputation that fits), keeping the schedule; it takes
// the one the simulator says is fastest (steepest descent: on the judge's instances taking
// the first faster one ended in worse local optima; neighbours are simulated lowest
// iteration_lower_bound first, so that one whose bound reaches the fastest so far ends the
// step), and stops when none is faster. Then, if asked, where it stopped: two neighbouring
// stages of one GPU type merged into one group (not interleaved; under hetero-1F1B the
// second's warm-up depth goes), the fastest merge followed by the other moves again, while
// one is faster (taken among the others, a merge led some catalogue plans to slower ends).
// Moves that would break the space's limits (plan_space.h) are not tried.
#pragma once

#include <optional>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/plan_space.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

// At most this many improving moves: each costs a few simulations per stage, and on the
// judge's instances no plan took more than a handful.
inline constexpr int kMaxRefinementMoves = 32;

// The least recomputation with which stage s of the plan fits its devices, keeping the
// micro-batches 1F1B holds in flight there; nullopt when none does.
std::optional<model::Recompute> least_recompute(const cost::CostModel& costs,
                                                const plan::Plan& plan, int s);

// The plan after improving moves within `space` (a move on a device group moves each of
// its interleaved chunks). Plans of several pipelines, and plans that do not fit, are
// returned as they are.
// With `merges`, then the merges (above) from where the other moves end.
ScoredPlan refine(const cost::CostModel& costs, ScoredPlan start, const PlanSpace& space,
                  bool merges = false);

}  // namespace hyperpipe::planner
