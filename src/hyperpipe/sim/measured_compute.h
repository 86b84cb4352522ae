// The compute a run measured, per pipeline stage, to replay its plan on the simulator:
// the simulator given the run's own op times in place of the profiles'. What the replay
// still gets wrong is the schedule and communication model's error alone; what it gets
// right that the prediction did not is the profiles' (a host that changed speed, a stale
// profile). `hyperpipe train` reports both.
#pragma once

#include <map>
#include <optional>
#include <utility>

#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/sim_input.h"
#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::sim {

// Seconds, each the median over a stage's micro-batches and its device group's
// processes; absent where the run had no such op.
struct MeasuredCompute {
  std::optional<double> forward;
  std::optional<double> backward;  // a whole backward (BW)
  std::optional<double> backward_input;
  std::optional<double> backward_weight;
  std::optional<double> optimizer;  // a process's whole step, put on its first chunk's stage
};

// Keyed by (pipeline, stage within it), as plan::Plan numbers them.
using MeasuredComputes = std::map<std::pair<int, int>, MeasuredCompute>;

// The compute intervals of `measured` (one track per process, hyperpipe train's
// timeline) by stage: a track belongs to the pipeline and device group holding its
// device, an interval to the stage it names. Tracks on no device of the plan are left out.
MeasuredComputes measured_compute(const plan::Plan& plan, const trace::Timeline& measured);

// `cost` with what was measured in place of what was predicted.
void apply_measured(const MeasuredCompute& measured, StageCost& cost);

}  // namespace hyperpipe::sim
