// What no plan can beat: the iteration's compute spread over every device of the cluster in
// proportion to its speed, with nothing else — no pipeline bubble, no transfer, no
// all-reduce, no optimizer step, no memory limit. It says how much any plan could still
// gain, which bounds what "ours over theirs" can reach on a cluster.
#pragma once

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/baselines.h"

namespace hyperpipe::planner {

// Seconds one device of `gpu_type` spends per sequence on the whole model (forward and
// backward, no recomputation) at its most efficient share: the least, over every per-device
// micro-batch of 1 … global_batch sequences and every tp that fits in one of the type's
// nodes, of a group's compute time × tp / sequences.
double device_seconds_per_sequence(const cost::CostModel& costs, const BatchSettings& batch,
                                   const std::string& gpu_type);

// The global batch over the sum of every device's sequences per second: a lower bound on
// the simulated iteration of every plan for this batch.
double ideal_iteration(const cost::CostModel& costs, const BatchSettings& batch);

}  // namespace hyperpipe::planner
