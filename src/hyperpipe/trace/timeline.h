// What happened (or is predicted to happen) on each device during one iteration. The
// simulator and the runtime both produce it; the writers draw it.
#pragma once

#include <string>
#include <vector>

namespace hyperpipe::trace {

struct Interval {
  // "F", "B", "W", "BW", "send F", "send B", "allreduce", "replica sync", "tied embedding",
  // "global norm", "optimizer"
  std::string op;
  int stage = -1;        // pipeline stage (-1: none)
  int micro_batch = -1;  // -1: not tied to a micro-batch
  int chunk = 0;
  double start = 0;  // seconds from the start of the iteration
  double end = 0;
};

struct MemorySample {
  double time = 0;
  double bytes = 0;  // in use on each device of the track from this time on
};

// One device group running one pipeline rank (every device of it does the same work).
struct Track {
  std::string name;          // e.g. "stage 0: A100-40GB ×2 [0-1]"
  std::vector<int> devices;  // global device ids
  std::vector<Interval> compute;
  std::vector<Interval> communication;
  std::vector<MemorySample> memory;
  // Every op the track ran, in the order it ran them ("RF0<1", "F0", "AR.1", "GN", …, as
  // schedule::to_string with chunks writes them): the simulator's and the runtime's lists
  // of a device group must be equal.
  std::vector<std::string> ops;
  // Of every memory sample, the bytes of weights, gradients and optimizer state; the rest
  // of the first sample is what the device holds besides (reserved, or the process's own).
  double static_bytes = 0;
  // Measured: what the device held at its peak in the step as the system sees it (a CPU
  // process's peak resident set; a GPU's allocator reserve at its peak plus what lies
  // outside the allocator), to check the memory model's device-level peak; 0 unknown.
  double device_peak_bytes = 0;
  // Predicted: what the samples' bytes handed out by the allocator are multiplied by (its
  // reserve, cost/device_memory.h), so a comparison takes the model's activations back out.
  double allocator_ratio = 1;
  // Which of a plan's pipelines side by side (replicas) the track runs in, and which of
  // that pipeline's device groups (its rank in the pipeline's schedule).
  int pipeline = 0;
  int group = 0;
};

struct Timeline {
  std::string title;
  std::vector<Track> tracks;

  // The latest end of any interval.
  double end_time() const;
};

}  // namespace hyperpipe::trace
