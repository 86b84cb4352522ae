// Discrete-event execution of a schedule: each rank has a compute resource, separate
// send and receive ports and an all-reduce stream, so communication overlaps computation;
// transfers queue for ports and shared links; an op starts when the previous op of its
// rank is done and its inputs have arrived. The iteration's end runs as the schedule's
// epilogue ops (schedule/epilogue.h): each chunk's all-reduce on the stream, the sums
// across pipelines and of the tied embedding and the global norm as collectives that start
// when every rank taking part has arrived, then the optimizer.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "hyperpipe/sim/sim_input.h"
#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::sim {

struct RankStats {
  double busy = 0;            // compute (F, B, W, BW)
  double comm_wait = 0;       // compute idle while an input was in transit
  double bubble = 0;          // other idle time within the iteration
  double allreduce = 0;       // exposed gradient all-reduce (not hidden behind compute)
  double reduced = 0;         // when this rank's gradients are all-reduced inside its group
  double replica_sync = 0;    // waiting for and summing gradients across pipelines
  double tied_embedding = 0;  // summing the tied embedding's gradient (waits: bubble)
  double global_norm = 0;     // summing the global norm (waits for the others: bubble)
  double optimizer = 0;
  double compute_end = 0;  // finish of the last compute op
  double end = 0;          // finish of the optimizer step
  double peak_activation_bytes = 0;
  // reserved + allocator ratio × (static + peak activations): as the device counts it
  double peak_memory_bytes = 0;
  int peak_in_flight = 0;

  // The time spent in the epilogue's collectives (RS, TE, GN).
  double epilogue_sync() const { return replica_sync + tied_embedding + global_norm; }
};

struct SimOutput {
  double iteration_time = 0;
  std::vector<RankStats> ranks;
  // One track per rank, names left for the caller; without SimInput::record_timeline its
  // ops, intervals and memory points stay empty.
  trace::Timeline timeline;
  size_t simulated_ops = 0;
};

// A schedule no rank can go on with: a dependency cycle (schedule::validate would have
// said so), or blocking transfers whose sends wait for each other's receives.
class SimulationStuck : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws std::invalid_argument if the input sizes disagree, SimulationStuck if the
// schedule cannot finish.
SimOutput simulate(const SimInput& input);

}  // namespace hyperpipe::sim
