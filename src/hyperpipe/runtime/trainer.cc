#include "hyperpipe/runtime/trainer.h"

#include <fmt/format.h>

#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "hyperpipe/runtime/checkpoint_directory.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/runtime/host_memory.h"
#include "hyperpipe/runtime/rendezvous.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::runtime {
namespace {

// Without --trace-step the step compared with the prediction is the median one (by rank
// 0's time) of the last this many: one step alone scatters ±10% on a busy host, and a
// step's track (about a hundred intervals) is kept only this long.
constexpr size_t kRecentSteps = 32;

// Whether any process received a stop signal (SIGINT, SIGTERM, SIGHUP): all of them learn
// it at the same step boundary, so none starts a step the others will not run, and all
// stop on the same signal (the largest number received, so every exit code agrees).
// Returns it, or 0.
int agree_to_stop(Communicator& communicator) {
  const int world = communicator.world_size();
  // Each rank's signal in its own slot of a sum: the result is every rank's signal.
  std::vector<torch::Tensor> received{torch::zeros({world}, torch::kFloat32)};
  received[0][communicator.rank()] = StopSignals::received();
  std::vector<int> everyone(static_cast<size_t>(world));
  std::iota(everyone.begin(), everyone.end(), 0);
  communicator.all_reduce_sum(received, everyone);
  return static_cast<int>(received[0].max().item<float>());
}
constexpr char kTracedStepKey[] = "traced step";

torch::Device device_for(const std::string& name, const Rendezvous& rendezvous) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda") {
    if (!torch::cuda::is_available()) {
      throw InputError("--device", name, "cpu: this libtorch or machine has no CUDA");
    }
    return {torch::kCUDA, static_cast<c10::DeviceIndex>(rendezvous.local_rank)};
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
trace::Timeline gather_timeline(Communicator& communicator, const RankLayout& layout,
                                const model::Model& model, const cluster::Cluster& cluster,
                                int64_t traced_step) {
  trace::Timeline timeline;
  timeline.title = fmt::format("{} on {}: step {} (measured)", model.config().name, cluster.name(),
                               traced_step + 1);
  for (int r = 0; r < layout.world_size(); ++r) {
    auto track = trace::track_from_json(
        nlohmann::json::parse(communicator.store_get(fmt::format("track/{}", r))));
    const auto& other = layout.role(r);
    track.name = fmt::format(
        "rank {}: {}group {} dp {}{} ({})", r,
        layout.pipelines() > 1 ? fmt::format("pipeline {}, ", other.pipeline) : "", other.group,
        other.dp_index, other.tp > 1 ? fmt::format(" tp {}", other.tp_index) : "",
        cluster.device_type(other.device).name);
    track.devices = {other.device};
    timeline.tracks.push_back(std::move(track));
  }
  return timeline;
}

// The steps, once everything is checked and the processes have met.
TrainRecord run_training(const TrainOptions& options, const plan::Plan& plan,
                         const model::Model& model, const cluster::Cluster& cluster,
                         const RankLayout& layout, const TextCorpus& data,
                         const Rendezvous& rendezvous,
                         const std::optional<CheckpointInfo>& checkpoint,
                         const RunIdentity& identity, const ExecutorOptions& executor_options,
                         Communicator& communicator, TrainObserver& observer) {
  const ProcessRole& role = layout.role(rendezvous.rank);
  Executor executor(model, plan, layout, communicator, data, executor_options);
  TrainRecord record;
  record.reporter = rendezvous.rank == 0;
  if (checkpoint) {
    load_checkpoint(*checkpoint, executor, model.config().name);
    record.first_step = checkpoint->steps_done;
  }
  if (record.reporter) {
    observer.started(checkpoint ? std::optional(checkpoint->path) : std::nullopt,
                     record.first_step);
  }
  const auto save = [&](int64_t steps_done) {
    save_checkpoint(*options.checkpoint_dir, steps_done, executor, communicator, layout,
                    plan::to_json(plan), model.config().name, identity.to_json());
    if (record.reporter) observer.checkpoint_saved(steps_done);
  };
  log().info("rank {}: pipeline {}, device group {}, dp {}/{}, tp {}/{}, device {} ({}), speed {}",
             rendezvous.rank, role.pipeline, role.group, role.dp_index, role.dp, role.tp_index,
             role.tp, role.device, cluster.device_type(role.device).name, executor_options.speed);

  int64_t trace_step = options.trace_step.value_or(options.steps - 1);
  std::deque<std::pair<StepResult, int64_t>> recent;  // the last steps' results, their steps
  const auto send_track = [&](const trace::Track& track) {
    communicator.store_set(fmt::format("track/{}", rendezvous.rank),
                           trace::track_to_json(track).dump());
  };
  for (int64_t step = record.first_step; step < options.steps; ++step) {
    const StepResult result = executor.step(step);
    const StepRecord step_record{step, result.loss, result.grad_norm, result.seconds};
    record.steps.push_back(step_record);
    if (record.reporter) observer.step_done(step_record);
    if (options.checkpoint_dir &&
        ((options.checkpoint_every > 0 && (step + 1) % options.checkpoint_every == 0) ||
         step + 1 == options.steps)) {
      save(step + 1);
    }
    if (options.trace_step && step == trace_step) send_track(result.track);
    if (!options.trace_step) {
      recent.emplace_back(result, step);
      if (recent.size() > kRecentSteps) recent.pop_front();
    }
    const bool last = step + 1 == options.steps;
    if (const int signal_number = last ? 0 : agree_to_stop(communicator)) {
      // Stopped between steps: the step is whole, and so is the checkpoint of it.
      record.stopped_by = signal_number;
      record.steps_done = step + 1;
      const bool saved = options.checkpoint_dir && options.checkpoint_every > 0 &&
                         (step + 1) % options.checkpoint_every == 0;
      if (options.checkpoint_dir && !saved) save(step + 1);
      if (record.reporter) observer.stopped(signal_number, step + 1);
      communicator.stop_watchdog();
      communicator.barrier();
      return record;
    }
  }
  record.steps_done = options.steps;
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
    record.measured_timeline = gather_timeline(communicator, layout, model, cluster, trace_step);
    record.traced_step = trace_step;
  }
  // Done: a store that goes away now is the end of the run, not a failure.
  communicator.stop_watchdog();
  communicator.barrier();
  return record;
}

}  // namespace

namespace {

// Everything a process reads before it joins the others, checked: any problem is found
// here, alone, with a message for the user.
struct CheckedRun {
  plan::CheckedPlan checked;
  RankLayout layout;
  TextCorpus data;
  Rendezvous rendezvous;

  explicit CheckedRun(const TrainOptions& options)
      : checked(plan::load_checked_plan(options.plan_path, options.cluster)),
        layout(checked.plan, options.plan_path),
        data(load_data(options, checked)),
        rendezvous(rendezvous_from()) {
    const auto& config = checked.model.config();
    if (config.vocab < kByteVocabulary) {
      throw InputError(options.plan_path, "model",
                       fmt::format("a model with a vocabulary of at least {} (the byte tokens "
                                   "of the text data); {} has {}",
                                   kByteVocabulary, config.name, config.vocab));
    }
    if (rendezvous.world_size != layout.world_size()) {
      throw InputError(
          options.plan_path, "stages",
          fmt::format("{} processes, one per device of the plan; the launcher ({}) "
                      "started {}",
                      layout.world_size(), rendezvous.launcher, rendezvous.world_size));
    }
  }

  static TextCorpus load_data(const TrainOptions& options, const plan::CheckedPlan& checked) {
    if (options.steps <= 0) throw InputError("--steps", "", "a positive number of steps");
    const int64_t seq =
        checked.plan.seq_len > 0 ? checked.plan.seq_len : checked.model.config().seq_len;
    return TextCorpus::load(options.data_path, seq, options.data_seed);
  }
};

// The checkpoint to resume from, if any, after checking it is this run's. Rank 0 holds
// the directory's lock (in `directory`) for the whole run and refuses a directory with
// another run's checkpoints unless resuming or overwriting.
std::optional<CheckpointInfo> checkpoint_to_resume(const TrainOptions& options,
                                                   const CheckedRun& run,
                                                   const RunIdentity& identity,
                                                   std::optional<CheckpointDirectory>& directory) {
  if (options.resume && !options.checkpoint_dir) {
    throw InputError("--resume", "", "a --checkpoint-dir to resume from");
  }
  if (options.checkpoint_dir && run.rendezvous.rank == 0) {
    directory.emplace(*options.checkpoint_dir, options.resume, options.overwrite);
  }
  if (!options.resume) return std::nullopt;
  auto checkpoint = latest_checkpoint(*options.checkpoint_dir);
  if (checkpoint && checkpoint->manifest.contains("run")) {
    identity.require_same(checkpoint->manifest["run"],
                          (std::filesystem::path(checkpoint->path) / kCheckpointManifest).string());
  }
  return checkpoint;
}

// This process's device, threads and floating-point type.
ExecutorOptions process_settings(const TrainOptions& options, const CheckedRun& run) {
  ExecutorOptions settings;
  settings.optimizer = options.optimizer;
  settings.seed = options.seed;
  settings.device = device_for(options.device, run.rendezvous);
  const int device = run.layout.role(run.rendezvous.rank).device;
  settings.speed = run.checked.cluster.device_type(device).speed.value_or(1.0);
  torch::set_num_threads(options.threads);
  keep_freed_memory();
  const auto& config = run.checked.model.config();
  if (run_dtype(options.dtype, config.dtype, config.name) == "fp64") {
    torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  }
  return settings;
}

}  // namespace

std::string run_dtype(const std::string& requested, model::DType model_dtype,
                      const std::string& model_name) {
  if (requested == "fp32" || requested == "fp64") return requested;
  if (!requested.empty()) throw InputError("--dtype", requested, "fp32 or fp64");
  if (model_dtype == model::DType::fp32) return "fp32";
  throw InputError(
      "--dtype", "",
      fmt::format("a type the runtime trains in: model {} says {}, and mixed precision is not "
                  "built yet; --dtype fp32 trains it in fp32 (the prediction then costed in "
                  "fp32 too), or set `dtype: fp32` in the model",
                  model_name, model::to_string(model_dtype)));
}

TrainRecord train(const TrainOptions& options, TrainObserver& observer) {
  const CheckedRun run(options);
  const auto& [plan, model, cluster] = run.checked;
  // The data's CRC-32 is read once, for the check here and every manifest of the run.
  const RunIdentity identity = identity_of(model.config().name, options.seed, options.data_path);
  std::optional<CheckpointDirectory> directory;
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
  const auto communicator = connect(rendezvous, settings.device, options.timeout);
  // A failure anywhere ends this process too, with the report that names it.
  communicator->start_watchdog([](const std::string& message) {
    log().error("{}", message);
    log().flush();
    std::_Exit(kExitRunFailed);
  });
  try {
    return run_training(options, plan, model, cluster, run.layout, run.data, rendezvous, checkpoint,
                        identity, settings, *communicator, observer);
  } catch (const CommunicationError& error) {
    throw CommunicationError(communicator->report_failure(error.what()));
  }
}
}  // namespace hyperpipe::runtime
