// How far a make_plan call has come, for a progress line: the phase under way, the share
// of the whole done, the fastest plan that fits so far. And the clock that closes
// make_plan's phases one after another, timing each and counting what it simulated.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hyperpipe/planner/plan_space.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

struct PlanProgress {
  std::string phase;  // the phase under way ("first pass", …), or "done"
  int step = 0;       // steps of the phase done, of `steps`
  int steps = 0;
  // The share of the call done, weighing each phase by its usual share of the time
  // (kPhaseShares); an estimate, good enough for a time left.
  double fraction = 0;
  double best_iteration = 0;  // seconds; 0 while no plan that fits is found
  int64_t simulations = 0;    // plans simulated so far
};

using PlanProgressCallback = std::function<void(const PlanProgress&)>;

// Where a make_plan call spent its time: one phase of it, and how much it simulated.
struct PlanPhase {
  std::string name;  // "search", "first pass", "schedules and refinement", …
  double seconds = 0;
  int64_t simulations = 0;    // plans simulated
  int64_t simulated_ops = 0;  // schedule ops the simulator ran for them
};

// Closes the phases named in `planned`, in that order, into `phases`; reports progress to
// `report` (if set) at each step and each close.
class PhaseClock {
 public:
  PhaseClock(std::vector<PlanPhase>& phases, std::vector<std::string> planned,
             PlanProgressCallback report, const PlanSpace& space);

  // `done` of `total` steps of the phase under way.
  void step(int done, int total);
  // A plan met on the way: the best so far if it fits the space and beats it.
  void offer(const ScoredPlan& scored);
  void close(const std::string& name);
  // The last report: everything done.
  void finish();

 private:
  void report(int done, int total);

  std::vector<PlanPhase>& phases_;
  std::vector<std::string> planned_;
  PlanProgressCallback report_;
  const PlanSpace& space_;
  std::chrono::steady_clock::time_point start_;
  SimulationTally tally_;
  SimulationTally first_tally_;
  double best_ = 0;
};

}  // namespace hyperpipe::planner
