#include "hyperpipe/runtime/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/host_memory.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/rendezvous.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "hyperpipe/runtime/device_check.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/runtime/hf_weights.h"
#include "hyperpipe/runtime/logits_file.h"
#include "hyperpipe/runtime/mixed_precision.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/tokenizers/tokenizer.h"
#include "hyperpipe/trace/timeline_json.h"
#include "hyperpipe/training/checkpoint_directory.h"

namespace hyperpipe::runtime {
namespace {

// Without --trace-step the step compared with the prediction is the median one (by rank
// 0's time) of the last this many: one step alone scatters ±10% on a busy host, and a
// step's track (about a hundred intervals) is kept only this long.
constexpr size_t kRecentSteps = 32;

// How long a launch's pre-flight scans an indexed dataset's ids against the vocabulary:
// about 10^9 ids at memory speed, all of most datasets, without holding a launch for
// minutes on one of terabytes (the rest are checked as windows are drawn).
constexpr std::chrono::milliseconds kPreflightIdScan{3000};

// What every process learns at a step's end, from one all-reduce of one small tensor
// (each rank's figures in slots of their own, so the sum holds everyone's): whether any
// received a stop signal (SIGINT, SIGTERM, SIGHUP), so none starts a step the others will
// not run, and all stop on the same signal (the largest number received, so every exit
// code agrees); each rank's compute in the step; whether rank 0 asks for a switch of
// plans; and whether every rank's part of the open checkpoint is on disk, so all complete
// it together without waiting.
struct StepAgreement {
  int stop_signal = 0;
  std::vector<double> compute;  // seconds, by rank
  bool switch_plans = false;
  bool checkpoint_written = false;
};

StepAgreement agree_at_step_end(Communicator& communicator, double compute, bool switch_plans,
                                bool checkpoint_written) {
  const int world = communicator.world_size();
  const int rank = communicator.rank();
  std::vector<torch::Tensor> slots{torch::zeros({2 * world + 2}, torch::kFloat64)};
  auto slot = slots[0].accessor<double, 1>();
  slot[rank] = StopSignals::received();
  slot[world + rank] = compute;
  if (switch_plans) slot[2 * world] = 1;
  if (!checkpoint_written) slot[2 * world + 1] = 1;
  std::vector<int> everyone(static_cast<size_t>(world));
  std::iota(everyone.begin(), everyone.end(), 0);
  communicator.all_reduce_sum(slots, everyone);
  const auto sum = slots[0].accessor<double, 1>();
  StepAgreement agreement;
  for (int r = 0; r < world; ++r) {
    agreement.stop_signal = std::max(agreement.stop_signal, static_cast<int>(sum[r]));
    agreement.compute.push_back(sum[world + r]);
  }
  agreement.switch_plans = sum[2 * world] > 0;
  agreement.checkpoint_written = sum[2 * world + 1] == 0;
  return agreement;
}

// Seconds of F, B, W and BW in a step's track (what the simulator counts as busy).
double compute_seconds(const trace::Track& track) {
  double seconds = 0;
  for (const auto& interval : track.compute) {
    if (interval.op == "F" || interval.op == "B" || interval.op == "W" || interval.op == "BW") {
      seconds += interval.end - interval.start;
    }
  }
  return seconds;
}

// train --stand-in-speeds: the file's speed for this process's device, when the file has
// changed since `seen` (which it updates); lines "DEVICE SPEED", # comments.
std::optional<double> new_stand_in_speed(const std::string& path, int device,
                                         std::filesystem::file_time_type& seen) {
  std::error_code error;
  const auto written = std::filesystem::last_write_time(path, error);
  if (error || written == seen) return std::nullopt;
  seen = written;
  std::ifstream in(path);
  std::string line;
  std::optional<double> speed;
  while (std::getline(in, line)) {
    std::istringstream fields(line.substr(0, line.find('#')));
    int listed = -1;
    double value = 0;
    if (!(fields >> listed)) continue;
    if (!(fields >> value) || !(value > 0)) {
      log().warn("{}: '{}' is not a device and a positive speed; passed over", path, line);
      continue;
    }
    if (listed == device) speed = value;
  }
  return speed;
}

constexpr char kTracedStepKey[] = "traced step";

torch::Device device_for(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda") {
    if (!torch::cuda::is_available()) {
      throw InputError("--device", name, "cpu: this libtorch or machine has no CUDA");
    }
    return {torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank)};
  }
  throw InputError("--device", name, "cpu or cuda");
}

// Rank 0 picks the step whose timeline it gathers: the median of the recent ones by its
// time (the run's first, which warms caches and allocators, only when alone).
int64_t median_step(const std::deque<std::pair<StepResult, int64_t>>& recent, int64_t first_step) {
  std::vector<double> seconds;
  for (const auto& [result, step] : recent) {
    if (recent.size() == 1 || step != first_step) seconds.push_back(result.seconds);
  }
  const double middle = median(seconds);
  for (const auto& [result, step] : recent) {
    if (result.seconds == middle && (recent.size() == 1 || step != first_step)) return step;
  }
  return recent.back().second;
}

// Rank 0 gathers every rank's track of the traced step into one timeline.
// Every rank's track under `key`/RANK in the store, one per rank, named after its role.
trace::Timeline gather_timeline(Communicator& communicator, const plan::RankLayout& layout,
                                const cluster::Cluster& cluster, const std::string& key,
                                std::string title) {
  trace::Timeline timeline;
  timeline.title = std::move(title);
  for (int r = 0; r < layout.world_size(); ++r) {
    auto track = trace::track_from_json(
        nlohmann::json::parse(communicator.store_get(fmt::format("{}/{}", key, r))));
    const auto& other = layout.role(r);
    track.name = fmt::format(
        "rank {}: {}group {} dp {}{} ({})", r,
        layout.pipelines() > 1 ? fmt::format("pipeline {}, ", other.pipeline) : "", other.group,
        other.dp_index, other.tp > 1 ? fmt::format(" tp {}", other.tp_index) : "",
        cluster.device_type(other.device).name);
    track.devices = {other.device};
    track.pipeline = other.pipeline;
    track.group = other.group;
    timeline.tracks.push_back(std::move(track));
  }
  return timeline;
}

// The steps drawn together (--trace-steps): the given step and those after it, else the
// run's last; [first, end).
struct StepWindow {
  int64_t first = 0;
  int64_t end = 0;
  bool holds(int64_t step) const { return step >= first && step < end; }
};

StepWindow step_window(const TrainOptions& options, int64_t first_step) {
  if (options.trace_steps <= 1) return {};
  const int64_t first = options.trace_step
                            ? std::max(*options.trace_step, first_step)
                            : std::max(first_step, options.steps - options.trace_steps);
  return {first, std::min(options.steps, first + options.trace_steps)};
}

// Whether a checkpoint is written after `steps_done` steps: every --checkpoint-every
// steps, and after the last.
bool checkpoint_due(const TrainOptions& options, int64_t steps_done) {
  return options.checkpoint_dir &&
         ((options.checkpoint_every > 0 && steps_done % options.checkpoint_every == 0) ||
          steps_done == options.steps);
}

// Whether the validation loss is measured after `steps_done` steps: every
// --eval-interval steps, and after the last.
bool evaluation_due(const TrainOptions& options, int64_t steps_done) {
  return options.eval_interval > 0 &&
         (steps_done % options.eval_interval == 0 || steps_done == options.steps);
}

// One rank's steps as one track: each step's intervals moved by when it began after the
// window's first step (this process's clock, as each step's own times are).
trace::Track join_steps(const std::vector<std::pair<trace::Track, double>>& steps) {
  trace::Track joined;
  for (const auto& [track, began] : steps) {
    const double offset = began - steps.front().second;
    for (auto [from, to] : {std::pair{&track.compute, &joined.compute},
                            std::pair{&track.communication, &joined.communication}}) {
      for (auto interval : *from) {
        interval.start += offset;
        interval.end += offset;
        to->push_back(std::move(interval));
      }
    }
    for (auto sample : track.memory) {
      sample.time += offset;
      joined.memory.push_back(sample);
    }
    joined.ops.insert(joined.ops.end(), track.ops.begin(), track.ops.end());
  }
  if (!steps.empty()) joined.static_bytes = steps.front().first.static_bytes;
  return joined;
}

}  // namespace

namespace {

// What every process reads, checked alone (before it joins the others): any problem is
// found here with a message for the user.
struct CheckedInputs {
  plan::CheckedPlan checked;
  plan::RankLayout layout;
  // The --tokenizer's (none: bytes for text, and indexed data's own ids).
  std::shared_ptr<const tokenizers::Tokenizer> tokenizer;
  training::TextCorpus data;
  std::string dtype;  // run_dtype

  explicit CheckedInputs(const TrainOptions& options)
      : checked(plan::load_checked_plan(options.plan_path, options.cluster)),
        layout(checked.plan, options.plan_path),
        tokenizer(open_checked_tokenizer(options, checked)),
        data(load_data(options, checked, tokenizer.get())),
        dtype(run_dtype(options.dtype, checked.model.config().dtype)) {
    const auto& config = checked.model.config();
    if (options.resume && !options.checkpoint_dir) {
      throw InputError("--resume", "", "a --checkpoint-dir to resume from");
    }
    // Checked before any process meets the others: config.json and the weights' headers.
    if (options.init_from) open_hf_checkpoint(*options.init_from, config);
    if (options.logits_dir) require_no_earlier_logits(*options.logits_dir);
    if (options.loss_scale && !(*options.loss_scale > 0)) {
      throw InputError("--loss-scale", fmt::format("{}", *options.loss_scale),
                       "a positive initial loss scale");
    }
    if (options.loss_scale_interval < 1) {
      throw InputError("--loss-scale-interval", std::to_string(options.loss_scale_interval),
                       "a positive number of steps");
    }
  }

  // The run's tokenizer, its ids checked to fit the model's embedding. A tokenizer smaller
  // than the embedding is common (Megatron and Qwen2 pad the vocabulary for speed); one
  // larger would index past it.
  static std::shared_ptr<const tokenizers::Tokenizer> open_checked_tokenizer(
      const TrainOptions& options, const plan::CheckedPlan& checked) {
    std::shared_ptr<const tokenizers::Tokenizer> tokenizer;
    if (options.tokenizer) tokenizer = tokenizers::open_tokenizer(*options.tokenizer);
    const auto& config = checked.model.config();
    const bool text = !training::is_indexed_dataset(options.data_path);
    const int64_t tokens = tokenizer ? tokenizer->vocab_size() : training::kByteVocabulary;
    if ((text || tokenizer) && tokens > config.vocab) {
      throw InputError(
          options.tokenizer ? "--tokenizer" : options.plan_path,
          options.tokenizer ? *options.tokenizer : "model",
          fmt::format("a model whose vocabulary holds the tokenizer's {} ids ({}); {} has {}",
                      tokens, tokenizer ? tokenizer->describe() : "the text data's bytes",
                      config.name, config.vocab));
    }
    if (tokenizer && tokens < config.vocab) {
      log().info("{} has {} tokens; {}'s embedding has {} rows (the rest are never drawn)",
                 tokenizer->describe(), tokens, config.name, config.vocab);
    }
    return tokenizer;
  }

  static training::TextCorpus load_data(const TrainOptions& options,
                                        const plan::CheckedPlan& checked,
                                        const tokenizers::Tokenizer* tokenizer) {
    if (options.steps <= 0) throw InputError("--steps", "", "a positive number of steps");
    const int64_t seq = checked.model.config().sequence_length(checked.plan.seq_len);
    training::TextCorpus data =
        training::TextCorpus::load(options.data_path, seq, options.data_seed,
                                   checked.model.config().vocab, tokenizer, options.json_key);
    if (options.eval_interval > 0) {
      // Held out: every window the validation batches draw, once each.
      const int64_t batch = checked.plan.global_batch();
      const int64_t held = options.eval_iters * batch;
      if (options.eval_iters < 1 || held + batch > data.windows()) {
        throw InputError(
            "--eval-iters", std::to_string(options.eval_iters),
            fmt::format("from 1 to {}: each validation batch holds a global batch ({} windows "
                        "of {} tokens) of {}'s {} out of training, and training needs one",
                        data.windows() / batch - 1, batch, seq + 1, options.data_path,
                        data.windows()));
      }
      data.hold_out(held);
    }
    return data;
  }
};

// The type weights and activations are held in (fp64 through the default dtype).
torch::ScalarType weight_type(const std::string& dtype) {
  return dtype == "fp64" ? torch::kDouble : scalar_type_of(costed_dtype(dtype));
}

// What this machine's libtorch must compute for the run: its dtype's kernels. (Gloo and
// NCCL both sum bf16, so a bf16 gradient all-reduce needs nothing more.)
void require_device_support(const CheckedInputs& inputs, const torch::Device& device) {
  require_kernels_for(weight_type(inputs.dtype), device, "--dtype");
}

// The inputs, and the launcher's word on where this process stands among the others.
struct CheckedRun : CheckedInputs {
  Rendezvous rendezvous;

  explicit CheckedRun(const TrainOptions& options)
      : CheckedInputs(options), rendezvous(rendezvous_from()) {
    const torch::Device device = device_for(options.device, rendezvous.local_rank);
    require_device_support(*this, device);
    if (rendezvous.world_size != layout.world_size()) {
      throw InputError(
          options.plan_path, "stages",
          fmt::format("{} processes, one per device of the plan; the launcher ({}) "
                      "started {}",
                      layout.world_size(), rendezvous.launcher, rendezvous.world_size));
    }
    if (options.check_placement) {
      require_planned_device(device, checked.cluster, layout.role(rendezvous.rank).device,
                             rendezvous.rank, options.plan_path);
    }
  }
};

// What makes this run the same run (checkpoint_directory.h). Reads the data's CRC-32.
training::RunIdentity identity_of_run(const TrainOptions& options, const CheckedInputs& inputs) {
  return training::identity_of(
      inputs.checked.model.config().name, options.seed, options.data_path,
      inputs.tokenizer ? inputs.tokenizer->identity() : std::string(training::kNoTokenizer));
}

// The last complete checkpoint in `dir`, if any, refused unless it is this run's and this
// run follows its learning-rate schedule.
std::optional<CheckpointInfo> latest_checkpoint_of(const training::RunIdentity& identity,
                                                   const TrainOptions& options,
                                                   const std::string& dir) {
  auto checkpoint = latest_checkpoint(dir);
  if (!checkpoint) return checkpoint;
  const std::string manifest =
      (std::filesystem::path(checkpoint->path) / kCheckpointManifest).string();
  if (checkpoint->manifest.contains("run")) {
    identity.require_same(checkpoint->manifest["run"], manifest);
  }
  training::require_same_schedule(options.optimizer.lr, checkpoint->manifest, manifest);
  return checkpoint;
}

// The checkpoint to resume from, if any, after checking it is this run's. Rank 0 holds
// the directory's lock (in `directory`) for the whole run and refuses a directory with
// another run's checkpoints unless resuming or overwriting.
std::optional<CheckpointInfo> checkpoint_to_resume(
    const TrainOptions& options, const CheckedRun& run, const training::RunIdentity& identity,
    std::optional<training::CheckpointDirectory>& directory) {
  if (options.checkpoint_dir && run.rendezvous.rank == 0) {
    directory.emplace(*options.checkpoint_dir, options.resume, options.overwrite);
  }
  if (!options.resume) return std::nullopt;
  return latest_checkpoint_of(identity, options, *options.checkpoint_dir);
}

// This process's device, threads and floating-point type.
ExecutorOptions process_settings(const TrainOptions& options, const CheckedRun& run) {
  ExecutorOptions settings;
  settings.optimizer = options.optimizer;
  settings.seed = options.seed;
  settings.device = device_for(options.device, run.rendezvous.local_rank);
  const int device = run.layout.role(run.rendezvous.rank).device;
  settings.speed = run.checked.cluster.device_type(device).speed.value_or(1.0);
  torch::set_num_threads(options.threads);
  // As the model file says (the cost model priced its products at the same rate).
  if (settings.device.is_cuda()) {
    at::globalContext().setAllowTF32CuBLAS(run.checked.model.config().tf32);
  }
  keep_freed_memory();
  if (run.dtype == "fp64") torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  settings.dtype = weight_type(run.dtype);
  if (options.loss_scale || run.dtype == "fp16") {
    training::LossScaling scaling;
    scaling.initial_scale = options.loss_scale.value_or(scaling.initial_scale);
    scaling.growth_interval = options.loss_scale_interval;
    settings.loss_scaling = scaling;
  }
  return settings;
}

// The steps, once everything is checked and the processes have met.
TrainRecord run_training(const TrainOptions& options, const CheckedRun& run,
                         const std::optional<CheckpointInfo>& checkpoint,
                         const training::RunIdentity& identity,
                         const ExecutorOptions& executor_options, Communicator& communicator,
                         TrainObserver& observer) {
  const auto& [plan, model, cluster] = run.checked;
  const plan::RankLayout& layout = run.layout;
  const Rendezvous& rendezvous = run.rendezvous;
  const plan::ProcessRole& role = layout.role(rendezvous.rank);
  ExecutorOptions settings = executor_options;
  if (rendezvous.rank == 0) {
    settings.layer_built = [&observer](int built, int total) {
      observer.layer_built(built, total);
    };
  }
  Executor executor(model, plan, layout, communicator, run.data, settings);
  TrainRecord record;
  record.reporter = rendezvous.rank == 0;
  if (checkpoint) {
    load_checkpoint(*checkpoint, executor, model.config().name);
    record.first_step = checkpoint->steps_done;
  } else if (options.init_from) {
    load_hf_weights(*options.init_from, executor, model.config());
  }
  if (record.reporter) {
    observer.started(checkpoint ? std::optional(checkpoint->path) : std::nullopt,
                     record.first_step);
  }
  std::optional<CheckpointWriter> checkpoints;
  if (options.checkpoint_dir) {
    checkpoints.emplace(*options.checkpoint_dir, communicator, layout, plan::to_json(plan),
                        model.config().name, identity.to_json(), options.checkpoint_write_delay);
  }
  // Collective, as a checkpoint is completed: rank 0 reports it.
  const auto complete_checkpoint = [&] {
    const auto steps_done = checkpoints ? checkpoints->complete() : std::nullopt;
    if (steps_done && record.reporter) {
      observer.checkpoint_saved(*steps_done, checkpoints->last_save_seconds());
    }
  };
  // Begun here, the checkpoint is written while the next steps run, and completed at the
  // first step end where every rank's part is on disk (or at the next save, or the end).
  const auto save = [&](int64_t steps_done) {
    complete_checkpoint();
    checkpoints->begin(steps_done, executor);
  };
  log().info("rank {}: pipeline {}, device group {}, dp {}/{}, tp {}/{}, device {} ({}), speed {}",
             rendezvous.rank, role.pipeline, role.group, role.dp_index, role.dp, role.tp_index,
             role.tp, role.device, cluster.device_type(role.device).name, executor_options.speed);

  int64_t trace_step = options.trace_step.value_or(options.steps - 1);
  const StepWindow window = step_window(options, record.first_step);
  std::vector<std::pair<trace::Track, double>> window_tracks;  // each with when it began
  const auto run_began = std::chrono::steady_clock::now();
  std::deque<std::pair<StepResult, int64_t>> recent;  // the last steps' results, their steps
  const auto send_track = [&](const trace::Track& track) {
    communicator.store_set(fmt::format("track/{}", rendezvous.rank),
                           trace::track_to_json(track).dump());
  };
  bool switch_asked = false;  // rank 0's observer wants another plan
  std::filesystem::file_time_type speeds_seen{};
  std::vector<LogitRows> first_logits;  // --logits: the first step's, this process's rows
  if (options.logits_dir) {
    executor.set_logits_observer(
        [&first_logits](LogitRows rows) { first_logits.push_back(std::move(rows)); });
  }
  for (int64_t step = record.first_step; step < options.steps; ++step) {
    if (options.stand_in_speeds) {
      if (const auto speed =
              new_stand_in_speed(*options.stand_in_speeds, role.device, speeds_seen)) {
        log().info("rank {}: device {} computes at speed {} from step {}", rendezvous.rank,
                   role.device, *speed, step + 1);
        executor.set_speed(*speed);
      }
    }
    const double began =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_began).count();
    const StepResult result = executor.step(step);
    if (options.logits_dir && step == record.first_step) {
      executor.set_logits_observer({});
      if (!first_logits.empty()) {
        write_logits_file(*options.logits_dir, rendezvous.rank, step, first_logits);
        first_logits.clear();
      }
    }
    if (window.holds(step)) window_tracks.emplace_back(result.track, began);
    const StepRecord step_record{step,
                                 result.loss,
                                 result.grad_norm,
                                 result.seconds,
                                 result.loss_scale,
                                 result.skipped,
                                 result.lr,
                                 result.track.device_peak_bytes};
    record.steps.push_back(step_record);
    if (record.reporter) observer.step_done(step_record);
    if (evaluation_due(options, step + 1)) {
      double sum = 0;
      for (int64_t batch = 0; batch < options.eval_iters; ++batch) {
        sum += executor.evaluate(batch).loss;
      }
      const ValidationRecord validation{step, sum / static_cast<double>(options.eval_iters)};
      record.validations.push_back(validation);
      if (record.reporter) observer.evaluated(step, validation.loss);
    }
    if (checkpoint_due(options, step + 1)) {
      save(step + 1);
      if (record.reporter && step + 1 < options.steps && !switch_asked) {
        switch_asked = observer.hand_over_after_checkpoint(step + 1);
      }
    }
    if (options.trace_step && step == trace_step) send_track(result.track);
    if (!options.trace_step) {
      recent.emplace_back(result, step);
      if (recent.size() > kRecentSteps) recent.pop_front();
    }
    const bool last = step + 1 == options.steps;
    if (last) break;
    const StepAgreement agreed =
        agree_at_step_end(communicator, compute_seconds(result.track), switch_asked,
                          !checkpoints || checkpoints->written());
    if (agreed.checkpoint_written) complete_checkpoint();
    if (record.reporter && !switch_asked) {
      switch_asked = observer.step_measured(step, agreed.compute);
    }
    // Stopped by a signal, or handing over to another plan, between steps: the step is
    // whole, and so is the checkpoint of it (the next plan starts from it).
    if (agreed.stop_signal || (agreed.switch_plans && options.checkpoint_dir)) {
      record.stopped_by = agreed.stop_signal;
      record.switching_plans = agreed.stop_signal == 0;
      record.steps_done = step + 1;
      if (options.checkpoint_dir && !checkpoint_due(options, step + 1)) save(step + 1);
      complete_checkpoint();
      if (record.reporter && record.switching_plans) observer.switching(step + 1);
      if (record.reporter && record.stopped_by) observer.stopped(record.stopped_by, step + 1);
      communicator.stop_watchdog();
      communicator.barrier();
      return record;
    }
  }
  record.steps_done = options.steps;
  complete_checkpoint();
  if (!options.trace_step && !recent.empty()) {
    // Every rank sends its track of the step rank 0 picks.
    if (record.reporter) {
      communicator.store_set(kTracedStepKey,
                             std::to_string(median_step(recent, record.first_step)));
    }
    trace_step = std::stoll(communicator.store_get(kTracedStepKey));
    for (const auto& [result, step] : recent) {
      if (step == trace_step) send_track(result.track);
    }
  }
  const bool traced = trace_step >= record.first_step && trace_step < options.steps;
  if (record.reporter && traced) {
    record.measured_timeline =
        gather_timeline(communicator, layout, cluster, "track",
                        fmt::format("{} on {}: step {} (measured)", model.config().name,
                                    cluster.name(), trace_step + 1));
    record.traced_step = trace_step;
  }
  if (!window_tracks.empty()) {
    communicator.store_set(fmt::format("steps/{}", rendezvous.rank),
                           trace::track_to_json(join_steps(window_tracks)).dump());
    if (record.reporter) {
      record.measured_steps = gather_timeline(
          communicator, layout, cluster, "steps",
          fmt::format("{} on {}: steps {}–{} (measured)", model.config().name, cluster.name(),
                      window.first + 1, window.first + static_cast<int64_t>(window_tracks.size())));
      record.first_traced_step = window.first;
    }
  }
  // Done: a store that goes away now is the end of the run, not a failure.
  communicator.stop_watchdog();
  communicator.barrier();
  return record;
}

}  // namespace

std::string run_dtype(const std::string& requested, model::DType model_dtype) {
  if (requested.empty()) return std::string(model::to_string(model_dtype));
  if (requested == "fp64" || model::parse_dtype(requested)) {
    return requested == "fp64" ? requested
                               : std::string(model::to_string(*model::parse_dtype(requested)));
  }
  throw InputError("--dtype", requested, "bf16, fp16, fp32 or fp64");
}

model::DType costed_dtype(const std::string& run_dtype) {
  return *model::costed_dtype(run_dtype);
}

void check_run(const TrainOptions& options) {
  const CheckedInputs inputs(options);
  require_device_support(inputs, device_for(options.device, 0));
  const auto ids = inputs.data.check_token_ids(kPreflightIdScan);
  if (ids.scanned < ids.total) {
    log().info(
        "{}: the first {} of {} token ids are within the vocabulary; the rest are checked "
        "as the run draws them",
        options.data_path, ids.scanned, ids.total);
  }
  if (!options.checkpoint_dir) return;
  training::check_checkpoint_directory(*options.checkpoint_dir, options.resume, options.overwrite);
  if (options.resume) {
    latest_checkpoint_of(identity_of_run(options, inputs), options, *options.checkpoint_dir);
  }
}

TrainRecord train(const TrainOptions& options, TrainObserver& observer) {
  const CheckedRun run(options);
  const auto& [plan, model, cluster] = run.checked;
  // The data's CRC-32 is read once, for the check here and every manifest of the run.
  const training::RunIdentity identity = identity_of_run(options, run);
  std::optional<training::CheckpointDirectory> directory;
  const auto checkpoint = checkpoint_to_resume(options, run, identity, directory);
  const ExecutorOptions settings = process_settings(options, run);

  // From here a stop signal ends the run at the next step boundary (agree_to_stop), or
  // after kStopGraceSeconds at the latest.
  const StopSignals stop_signals(/*arm_alarm=*/true);
  const Rendezvous& rendezvous = run.rendezvous;
  if (rendezvous.token.empty() && rendezvous.world_size > 1 && rendezvous.rank == 0) {
    log().warn(
        "{} is not set: any process that reaches port {} can join or stop this run; "
        "export the same secret on every host (hyperpipe launch sets one itself)",
        kJobTokenVariable, rendezvous.port);
  }
  const auto joining = std::chrono::steady_clock::now();
  const auto communicator = connect(rendezvous, settings.device, options.timeout);
  if (rendezvous.rank == 0) {
    observer.joined(
        rendezvous.world_size,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - joining).count());
  }
  if (options.check_placement) {
    require_one_host_per_node(*communicator, run.layout, cluster, options.plan_path);
  }
  // A failure anywhere ends this process too, with the report that names it.
  communicator->start_watchdog([](const std::string& message) {
    log().error("{}", message);
    log().flush();
    std::_Exit(kExitRunFailed);
  });
  try {
    return run_training(options, run, checkpoint, identity, settings, *communicator, observer);
  } catch (const CommunicationError& error) {
    throw CommunicationError(communicator->report_failure(error.what()));
  }
}
}  // namespace hyperpipe::runtime
