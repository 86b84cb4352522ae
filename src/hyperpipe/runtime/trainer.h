// `hyperpipe train`: one process of a run. Every process reads the plan, model, cluster
// and data, checks them before anything starts, joins the others, and runs the steps.
// The runtime only runs: rank 0 tells an observer of each step and returns the record of
// the run (train_record.h); printing, the metrics file and the prediction are the CLI's.
// Plain types only here, so the torch-free side can include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "hyperpipe/model/dtype.h"
#include "hyperpipe/runtime/communication_error.h"
#include "hyperpipe/runtime/optimizer_options.h"
#include "hyperpipe/runtime/train_record.h"

namespace hyperpipe::runtime {

struct TrainOptions {
  std::string plan_path;
  std::string data_path;
  std::optional<std::string> cluster;  // instead of the plan's
  int64_t steps = 10;
  OptimizerOptions optimizer;
  uint64_t seed = 0;           // the initial weights
  uint64_t data_seed = 0;      // the order of the corpus's windows
  std::string device = "cpu";  // "cpu" or "cuda" (one GPU per process, by local rank)
  int threads = 1;             // intra-op threads per process
  // Floating-point type of weights and activations: "fp32", or "fp64" where a run must be
  // compared with another to far below fp32's rounding (Adam turns rounding noise in
  // gradients that should be zero into full-size steps); empty: the model's (run_dtype).
  std::string dtype;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // The step whose timeline rank 0 gathers (default: the median of the last 32 by rank 0's
  // time, the run's first left out).
  std::optional<int64_t> trace_step;
  std::optional<std::string> checkpoint_dir;
  int64_t checkpoint_every = 0;  // steps; 0: only at the end (when a directory is given)
  bool resume = false;
  // Replace the checkpoints of an earlier run in checkpoint_dir (else a new run refuses it).
  bool overwrite = false;
};

// What a run trains in: `requested` (--dtype) where given, else the model's own when the
// runtime trains in it. Mixed precision (bf16, fp16 with fp32 master weights) is not built
// yet, so a model in bf16 or fp16 is refused with InputError (naming --dtype fp32) rather
// than trained in fp32 against a prediction costed in its dtype.
std::string run_dtype(const std::string& requested, model::DType model_dtype,
                      const std::string& model_name);

// The exit code of a process that stops because another failed (its watchdog's).
inline constexpr int kExitRunFailed = 1;

// Throws InputError for bad input (before joining the others), CommunicationError when a
// peer fails or times out; ends the process with kExitRunFailed when another reports a
// failure or rank 0 vanishes. `observer` hears of rank 0's steps.
TrainRecord train(const TrainOptions& options, TrainObserver& observer);

}  // namespace hyperpipe::runtime
