#include "hyperpipe/runtime/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "hyperpipe/runtime/checkpoint_directory.h"
#include "hyperpipe/runtime/host_memory.h"
#include "hyperpipe/runtime/rendezvous.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"
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

// "run/measured.svg" → "run/measured.predicted.svg".
std::string predicted_path(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".predicted" + p.extension().string())).string();
}

std::string format_eta(double seconds) {
  if (seconds < 60) return fmt::format("{:.0f} s", seconds);
  return fmt::format("{:.0f} min {:02.0f} s", std::floor(seconds / 60), std::fmod(seconds, 60));
}

// The steps, once everything is checked and the processes have met.
TrainSummary run_training(const TrainOptions& options, const plan::Plan& plan,
                          const model::Model& model, const cluster::Cluster& cluster,
                          const RankLayout& layout, const TextCorpus& data,
                          const Rendezvous& rendezvous,
                          const std::optional<CheckpointInfo>& checkpoint,
                          const RunIdentity& identity, const ExecutorOptions& executor_options,
                          Communicator& communicator, const cost::ProfileDb* profiles,
                          std::ostream& out) {
  const ProcessRole& role = layout.role(rendezvous.rank);
  const int64_t seq = data.seq_len();
  Executor executor(model, plan, layout, communicator, data, executor_options);
  const bool reporter = rendezvous.rank == 0;
  TrainSummary summary;
  if (checkpoint) {
    load_checkpoint(*checkpoint, executor, model.config().name);
    summary.first_step = checkpoint->steps_done;
    if (reporter) {
      out << fmt::format("resuming from {} ({} steps done)\n", checkpoint->path,
                         checkpoint->steps_done);
    }
  } else if (options.resume && reporter) {
    out << fmt::format("no complete checkpoint in {}: starting from step 1\n",
                       *options.checkpoint_dir);
  }
  const auto save = [&](int64_t steps_done) {
    save_checkpoint(*options.checkpoint_dir, steps_done, executor, communicator, layout,
                    plan::to_json(plan), model.config().name, identity.to_json());
  };
  log().info("rank {}: pipeline {}, device group {}, dp {}/{}, tp {}/{}, device {} ({}), speed {}",
             rendezvous.rank, role.pipeline, role.group, role.dp_index, role.dp, role.tp_index,
             role.tp, role.device, cluster.device_type(role.device).name, executor_options.speed);

  std::vector<nlohmann::json> metrics;
  if (reporter && options.metrics_path && summary.first_step > 0) {
    // A resumed run keeps the metrics of the steps before it.
    std::ifstream previous(*options.metrics_path);
    std::string line;
    while (std::getline(previous, line)) {
      const auto entry = nlohmann::json::parse(line, nullptr, false);
      if (!entry.is_discarded() && entry.value("step", int64_t{-1}) >= 0 &&
          entry["step"].get<int64_t>() < summary.first_step) {
        metrics.push_back(entry);
      }
    }
  }
  int64_t trace_step = options.trace_step.value_or(options.steps - 1);
  std::deque<std::pair<StepResult, int64_t>> recent;  // the last steps' results, their steps
  const auto send_track = [&](const trace::Track& track) {
    communicator.store_set(fmt::format("track/{}", rendezvous.rank),
                           trace::track_to_json(track).dump());
  };
  const double tokens = static_cast<double>(plan.global_batch() * seq);
  double total_seconds = 0;
  const auto write_metrics = [&] {
    if (!reporter || !options.metrics_path) return;
    std::string lines;
    for (const auto& m : metrics) lines += m.dump() + "\n";
    write_file_atomically(*options.metrics_path, lines);
  };
  for (int64_t step = summary.first_step; step < options.steps; ++step) {
    const StepResult result = executor.step(step);
    summary.losses.push_back(result.loss);
    total_seconds += result.seconds;
    if (reporter) {
      const int64_t done = step + 1 - summary.first_step;
      const double mean = total_seconds / static_cast<double>(done);
      out << fmt::format("step {:>{}}/{}  loss {:.4f}  {:.0f} tokens/s  {:.3f} s/step  ETA {}\n",
                         step + 1, std::to_string(options.steps).size(), options.steps, result.loss,
                         tokens / result.seconds, result.seconds,
                         format_eta(mean * static_cast<double>(options.steps - step - 1)))
          << std::flush;
      metrics.push_back({{"step", step},
                         {"loss", result.loss},
                         {"grad_norm", result.grad_norm},
                         {"seconds", result.seconds},
                         {"tokens_per_s", tokens / result.seconds}});
    }
    if (options.checkpoint_dir &&
        ((options.checkpoint_every > 0 && (step + 1) % options.checkpoint_every == 0) ||
         step + 1 == options.steps)) {
      save(step + 1);
      write_metrics();  // the metrics so far survive with the checkpoint
    }
    if (options.trace_step && step == trace_step) send_track(result.track);
    if (!options.trace_step) {
      recent.emplace_back(result, step);
      if (recent.size() > kRecentSteps) recent.pop_front();
    }
    const bool last = step + 1 == options.steps;
    if (const int signal_number = last ? 0 : agree_to_stop(communicator)) {
      // Stopped between steps: the step is whole, and so is the checkpoint of it.
      summary.stopped_by = signal_number;
      summary.steps_done = step + 1;
      const bool saved = options.checkpoint_dir && options.checkpoint_every > 0 &&
                         (step + 1) % options.checkpoint_every == 0;
      if (options.checkpoint_dir && !saved) save(step + 1);
      write_metrics();
      if (reporter) {
        out << fmt::format("stopped by {} after step {}{}\n", signal_name(signal_number), step + 1,
                           options.checkpoint_dir ? fmt::format("; checkpoint of step {} in {}",
                                                                step + 1, *options.checkpoint_dir)
                                                  : "")
            << std::flush;
      }
      communicator.stop_watchdog();
      communicator.barrier();
      return summary;
    }
  }
  summary.steps_done = options.steps;
  if (!options.trace_step && !recent.empty()) {
    // Rank 0 picks the median step (the first of a run, which warms caches and
    // allocators, only when alone); every rank sends its track of it.
    if (reporter) {
      std::vector<std::pair<double, int64_t>> candidates;  // seconds, step
      for (const auto& [result, step] : recent) {
        if (recent.size() == 1 || step != summary.first_step) {
          candidates.emplace_back(result.seconds, step);
        }
      }
      std::sort(candidates.begin(), candidates.end());
      communicator.store_set(kTracedStepKey,
                             std::to_string(candidates[candidates.size() / 2].second));
    }
    trace_step = std::stoll(communicator.store_get(kTracedStepKey));
    for (const auto& [result, step] : recent) {
      if (step == trace_step) send_track(result.track);
    }
  }
  summary.mean_step_seconds =
      total_seconds / static_cast<double>(std::max<int64_t>(1, options.steps - summary.first_step));

  // The simulator's prediction for the same plan: with the profiles when given, else the
  // cost model's estimates. Only rank 0 reports it, so only rank 0 simulates.
  const cost::CostModel costs(model, cluster, {}, profiles);
  const sim::PlanSimulation simulation =
      reporter ? sim::simulate_plan(costs, plan) : sim::PlanSimulation();
  const bool traced = trace_step >= summary.first_step && trace_step < options.steps;
  trace::Timeline timeline;
  if (reporter && traced) {
    timeline.title = fmt::format("{} on {}: step {} (measured)", model.config().name,
                                 cluster.name(), trace_step + 1);
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
    auto predicted = simulation.output.timeline;
    predicted.title = fmt::format("{} on {} (predicted)", model.config().name, cluster.name());
    const auto write = [&](const std::optional<std::string>& path, const auto& render) {
      if (!path) return;
      write_file_atomically(*path, render(timeline));
      write_file_atomically(predicted_path(*path), render(predicted));
    };
    write(options.trace_path,
          [](const trace::Timeline& t) { return trace::chrome_trace(t).dump(); });
    write(options.svg_path, [](const trace::Timeline& t) { return trace::svg_gantt(t); });
    write(options.timeline_path,
          [](const trace::Timeline& t) { return trace::timeline_to_json(t).dump(); });
    summary.measured_timeline = timeline;
    summary.traced_step = trace_step + 1;
    summary.predicted_timeline = std::move(predicted);
    const sim::MeasuredComputes measured = sim::measured_compute(plan, timeline);
    sim::SimOptions replay;
    replay.measured = &measured;
    summary.replayed_iteration = sim::simulate_plan(costs, plan, replay).output.iteration_time;
  }
  if (reporter) {
    // Every run checks the cost model: the iteration it predicted against the one measured
    // (the median of the steps after the first, which warms caches and allocators).
    std::vector<double> seconds;
    for (const auto& m : metrics) {
      if (m["step"].get<int64_t>() > summary.first_step || metrics.size() == 1) {
        seconds.push_back(m["seconds"].get<double>());
      }
    }
    std::sort(seconds.begin(), seconds.end());
    summary.measured_iteration = seconds.empty() ? 0.0 : seconds[seconds.size() / 2];
    summary.predicted_iteration = simulation.output.iteration_time;
    const double error = summary.predicted_iteration / summary.measured_iteration - 1;
    out << fmt::format(
        "\npredicted {:.1f} ms per iteration ({}), measured {:.1f} ms (median of {} steps): "
        "error {:+.1f}%\n",
        summary.predicted_iteration * 1e3,
        profiles ? "simulator with profiles" : "simulator with estimates",
        summary.measured_iteration * 1e3, seconds.size(), 100 * error);
    nlohmann::json prediction{{"predicted_iteration_s", summary.predicted_iteration},
                              {"measured_iteration_s", summary.measured_iteration},
                              {"relative_error", error},
                              {"source", profiles ? "profiles" : "estimates"}};
    if (summary.replayed_iteration) {
      // What is left when the run's own op times stand in for the profiles': the error of
      // the schedule and communication model alone.
      const double replay_error = *summary.replayed_iteration / summary.measured_iteration - 1;
      out << fmt::format(
          "replayed with step {}'s measured compute: {:.1f} ms, error {:+.1f}% (the schedule "
          "and communication model alone)\n",
          summary.traced_step, *summary.replayed_iteration * 1e3, 100 * replay_error);
      prediction["replayed_iteration_s"] = *summary.replayed_iteration;
      prediction["replayed_error"] = replay_error;
      prediction["replayed_step"] = summary.traced_step - 1;
    }
    if (options.metrics_path) {
      write_file_atomically(*options.metrics_path + ".prediction.json", prediction.dump(2));
    }
  }
  write_metrics();
  // Done: a store that goes away now is the end of the run, not a failure.
  communicator.stop_watchdog();
  communicator.barrier();
  return summary;
}

}  // namespace

TrainSummary train(const TrainOptions& options, std::ostream& out) {
  // Everything that can be wrong with the input is found before joining the others.
  const auto [plan, model, cluster] = plan::load_checked_plan(options.plan_path, options.cluster);
  const RankLayout layout(plan, options.plan_path);
  if (model.config().vocab < kByteVocabulary) {
    throw InputError(options.plan_path, "model",
                     fmt::format("a model with a vocabulary of at least {} (the byte tokens of "
                                 "the text data); {} has {}",
                                 kByteVocabulary, model.config().name, model.config().vocab));
  }
  if (options.steps <= 0) throw InputError("--steps", "", "a positive number of steps");
  const int64_t seq = plan.seq_len > 0 ? plan.seq_len : model.config().seq_len;
  const TextCorpus data = TextCorpus::load(options.data_path, seq, options.data_seed);
  std::optional<cost::ProfileDb> profiles;
  if (options.profiles_path)
    profiles = cost::ProfileDb::load_for(*options.profiles_path, model.config().name);
  const Rendezvous rendezvous = rendezvous_from();
  if (rendezvous.world_size != layout.world_size()) {
    throw InputError(options.plan_path, "stages",
                     fmt::format("{} processes, one per device of the plan; the launcher ({}) "
                                 "started {}",
                                 layout.world_size(), rendezvous.launcher, rendezvous.world_size));
  }
  std::optional<CheckpointInfo> checkpoint;
  if (options.resume && !options.checkpoint_dir) {
    throw InputError("--resume", "", "a --checkpoint-dir to resume from");
  }
  // Rank 0 holds the directory's lock for the whole run (and refuses a directory with
  // another run's checkpoints unless resuming or overwriting).
  std::optional<CheckpointDirectory> directory;
  if (options.checkpoint_dir && rendezvous.rank == 0) {
    directory.emplace(*options.checkpoint_dir, options.resume, options.overwrite);
  }
  // The data's CRC-32 is read once, for the check here and every manifest of the run.
  const RunIdentity identity =
      identity_of(model.config().name, options.executor.seed, options.data_path);
  if (options.resume) {
    checkpoint = latest_checkpoint(*options.checkpoint_dir);
    if (checkpoint && checkpoint->manifest.contains("run")) {
      identity.require_same(
          checkpoint->manifest["run"],
          (std::filesystem::path(checkpoint->path) / kCheckpointManifest).string());
    }
  }
  const ProcessRole& role = layout.role(rendezvous.rank);
  ExecutorOptions executor_options = options.executor;
  executor_options.device = device_for(options.device, rendezvous);
  executor_options.speed = cluster.device_type(role.device).speed.value_or(1.0);
  torch::set_num_threads(options.threads);
  keep_freed_memory();
  if (options.dtype == "fp64") {
    torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  } else if (options.dtype != "fp32") {
    throw InputError("--dtype", options.dtype, "fp32 or fp64");
  }

  // From here a stop signal ends the run at the next step boundary (agree_to_stop), or
  // after kStopGraceSeconds at the latest.
  const StopSignals stop_signals(/*arm_alarm=*/true);
  if (rendezvous.token.empty() && rendezvous.world_size > 1 && rendezvous.rank == 0) {
    log().warn(
        "{} is not set: any process that reaches port {} can join or stop this run; "
        "export the same secret on every host (hyperpipe launch sets one itself)",
        kJobTokenVariable, rendezvous.port);
  }
  const auto communicator = connect(rendezvous, executor_options.device, options.timeout);
  // A failure anywhere ends this process too, with the report that names it.
  communicator->start_watchdog([](const std::string& message) {
    log().error("{}", message);
    log().flush();
    std::_Exit(kExitRunFailed);
  });
  try {
    return run_training(options, plan, model, cluster, layout, data, rendezvous, checkpoint,
                        identity, executor_options, *communicator, profiles ? &*profiles : nullptr,
                        out);
  } catch (const CommunicationError& error) {
    throw CommunicationError(communicator->report_failure(error.what()));
  }
}
}  // namespace hyperpipe::runtime
