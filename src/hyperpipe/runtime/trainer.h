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

#include "hyperpipe/datasets/json_lines.h"
#include "hyperpipe/model/dtype.h"
#include "hyperpipe/runtime/communication_error.h"
#include "hyperpipe/runtime/train_record.h"
#include "hyperpipe/training/loss_scaler.h"
#include "hyperpipe/training/optimizer_options.h"

namespace hyperpipe::runtime {

struct TrainOptions {
  std::string plan_path;
  std::string data_path;
  // The tokenizer text and JSON lines are read through (tokenizers::open_tokenizer's
  // names); none: bytes. Indexed data is already tokenized: given, it must be the one that
  // made the ids, whose vocabulary is checked against the model's.
  std::optional<std::string> tokenizer;
  std::string json_key = datasets::kDefaultJsonKey;  // the JSON lines' text field
  std::optional<std::string> cluster;                // instead of the plan's
  int64_t steps = 10;
  // Validation: after every eval_interval steps (and the last; 0: never), the mean loss of
  // eval_iters global batches drawn from windows held out of training (text_corpus.h).
  int64_t eval_interval = 0;
  int64_t eval_iters = 1;
  training::OptimizerOptions optimizer;
  uint64_t seed = 0;           // the initial weights
  uint64_t data_seed = 0;      // the order of the corpus's windows
  std::string device = "cpu";  // "cpu" or "cuda" (one GPU per process, by local rank)
  int threads = 1;             // intra-op threads per process
  // Floating-point type of weights and activations: "bf16" or "fp16" (mixed precision:
  // fp32 master weights, main grads and AdamW state), "fp32", or "fp64" where a run must
  // be compared with another to far below fp32's rounding (Adam turns rounding noise in
  // gradients that should be zero into full-size steps); empty: the model's.
  std::string dtype;
  // Dynamic loss scaling (loss_scaler.h) from this initial scale; without it, fp16 runs
  // scale from training::LossScaling's default and the other types do not scale.
  std::optional<double> loss_scale;
  int64_t loss_scale_interval = training::LossScaling{}.growth_interval;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // The step whose timeline rank 0 gathers (default: the median of the last 32 by rank 0's
  // time, the run's first left out).
  std::optional<int64_t> trace_step;
  // Steps drawn together by --trace and --svg: from trace_step (else the run's last this
  // many); 1: the traced step alone.
  int64_t trace_steps = 1;
  std::optional<std::string> checkpoint_dir;
  int64_t checkpoint_every = 0;  // steps; 0: only at the end (when a directory is given)
  bool resume = false;
  // A Hugging Face checkpoint's directory whose weights the run starts from (hf_weights.h);
  // a checkpoint resumed from wins over it.
  std::optional<std::string> init_from;
  // Where the last stage writes the logits of the run's first step, with their token ids
  // (logits_file.h): to hold the model against a reference implementation.
  std::optional<std::string> logits_dir;
  // Replace the checkpoints of an earlier run in checkpoint_dir (else a new run refuses it).
  bool overwrite = false;
  // Refuse to start where a process is not where the plan put it (device_check.h).
  bool check_placement = true;
  // A file of "DEVICE SPEED" lines the processes read at each step boundary when it has
  // changed: the stand-in on that device computes at that speed from then on (emulated
  // throttling; stand_in_clock.h).
  std::optional<std::string> stand_in_speeds;
  // Emulated slow storage (tests, benchmarks): each checkpoint's writing thread waits this
  // long before it writes.
  double checkpoint_write_delay = 0;
};

// What a run trains in: `requested` (--dtype: fp32, fp64, bf16, fp16) where given, else
// the model's own dtype. InputError for any other name.
std::string run_dtype(const std::string& requested, model::DType model_dtype);

// The type a run is costed in: its own, fp64 as fp32 (no device type lists fp64 rates).
model::DType costed_dtype(const std::string& run_dtype);

// Every check a process makes alone before it joins the others (plan, model, cluster,
// data, dtype, this machine's kernels for it), for a launcher to run once before it
// starts any process. Throws InputError.
void check_run(const TrainOptions& options);

// The exit code of a process that stops because another failed (its watchdog's).
inline constexpr int kExitRunFailed = 1;

// Throws InputError for bad input (before joining the others), CommunicationError when a
// peer fails or times out; ends the process with kExitRunFailed when another reports a
// failure or rank 0 vanishes. `observer` hears of rank 0's steps.
TrainRecord train(const TrainOptions& options, TrainObserver& observer);

}  // namespace hyperpipe::runtime
