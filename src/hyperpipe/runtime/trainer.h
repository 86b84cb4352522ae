// `hyperpipe train`: one process of a run. Every process reads the plan, model, cluster
// and data, checks them before anything starts, joins the others, and runs the steps;
// rank 0 reports progress, writes the metrics and the measured timeline.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::runtime {

struct TrainOptions {
  std::string plan_path;
  std::string data_path;
  std::optional<std::string> cluster;  // instead of the plan's
  int64_t steps = 10;
  ExecutorOptions executor;
  uint64_t data_seed = 0;      // the order of the corpus's windows
  std::string device = "cpu";  // "cpu" or "cuda" (one GPU per process, by local rank)
  int threads = 1;             // intra-op threads per process
  // Floating-point type of weights and activations: "fp32", or "fp64" where a run must be
  // compared with another to far below fp32's rounding (Adam turns rounding noise in
  // gradients that should be zero into full-size steps).
  std::string dtype = "fp32";
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::optional<std::string> metrics_path;  // JSON lines, one per step
  // The measured timeline of step `trace_step` (default: the median of the last 32 by
  // rank 0's time, the run's first left out) as a Chrome trace,
  // an SVG, a JSON document; beside each (NAME.predicted.EXT) the simulator's prediction
  // for the same plan.
  std::optional<std::string> trace_path;
  std::optional<std::string> svg_path;
  std::optional<std::string> timeline_path;  // the same as a hyperpipe.timeline/1 document
  std::optional<int64_t> trace_step;
  // Profiles for the simulator's prediction of this run (else the cost model's estimates).
  std::optional<std::string> profiles_path;
  std::optional<std::string> checkpoint_dir;
  int64_t checkpoint_every = 0;  // steps; 0: only at the end (when a directory is given)
  bool resume = false;
  // Replace the checkpoints of an earlier run in checkpoint_dir (else a new run refuses it).
  bool overwrite = false;
};

struct TrainSummary {
  int64_t first_step = 0;      // 0, or the step after a resumed checkpoint
  std::vector<double> losses;  // per step run
  double mean_step_seconds = 0;
  // Rank 0: the simulator's iteration for the plan, and the median measured one.
  double predicted_iteration = 0;
  double measured_iteration = 0;
  // Rank 0, when the traced step ran: what every process did in it, and what the
  // simulator predicted for the plan.
  std::optional<trace::Timeline> measured_timeline;
  std::optional<trace::Timeline> predicted_timeline;
  int64_t traced_step = 0;  // counted from 1, as printed
  // Rank 0, when the traced step ran: the simulator's iteration with that step's measured
  // compute in place of the profiles' (sim/measured_compute.h).
  std::optional<double> replayed_iteration;
  int64_t steps_done = 0;  // counted from the run's start, the resumed steps included
  // SIGINT, SIGTERM or SIGHUP when a stop signal ended the run early (after steps_done,
  // checkpointed when a checkpoint directory was given); 0 when it ran every step.
  int stopped_by = 0;
};

// The exit code of a process that stops because another failed (its watchdog's).
inline constexpr int kExitRunFailed = 1;

// Throws InputError for bad input (before joining the others), CommunicationError when a
// peer fails or times out; ends the process with kExitRunFailed when another reports a
// failure or rank 0 vanishes.
TrainSummary train(const TrainOptions& options, std::ostream& out);

}  // namespace hyperpipe::runtime
