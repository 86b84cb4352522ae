#include "hyperpipe/cli/train_progress.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/process_start.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/joins.h"

namespace hyperpipe::cli {
namespace {

// Off a terminal, start-up progress prints at most one line this often.
constexpr double kQuietSeconds = 2;

}  // namespace

TrainProgress::TrainProgress(TrainReportOptions options, std::ostream& out)
    : options_(std::move(options)), out_(out) {
  if (const auto started = process_start_time()) startup_["process_started"] = *started;
  mark_startup("reporter_created");
}

void TrainProgress::mark_startup(const char* milestone) {
  startup_[milestone] = epoch_seconds(std::chrono::system_clock::now());
}

void TrainProgress::joined(int processes, double seconds) {
  mark_startup("joined");
  out_ << options_.header
       << fmt::format("{} joined in {:.1f} s\n", counted(processes, "process", "processes"),
                      seconds)
       << std::flush;
}

void TrainProgress::layer_built(int built, int total) {
  const bool terminal = is_terminal(out_);
  if (!building_) {
    building_.emplace(out_, terminal);
    last_line_ = std::chrono::steady_clock::now();
  }
  // Off a terminal (a log, the launcher's pipe) a line at most every kQuietSeconds.
  const auto now = std::chrono::steady_clock::now();
  const bool due = std::chrono::duration<double>(now - last_line_).count() >= kQuietSeconds;
  if (terminal || due || built == total) {
    building_->update(built, total, "of this process's layers built");
    last_line_ = now;
  }
  if (built == total) {
    building_->finish();
    mark_startup("layers_built");
  }
}

void TrainProgress::started(const std::optional<std::string>& checkpoint, int64_t steps_done) {
  mark_startup("checkpoint_loaded");
  startup_["steps_done"] = steps_done;
  startup_["checkpoint"] = checkpoint ? nlohmann::json(*checkpoint) : nlohmann::json(nullptr);
  first_step_ = steps_done;
  if (checkpoint) {
    out_ << fmt::format("resuming from {} ({} done)\n", *checkpoint, counted(steps_done, "step"));
  } else if (options_.resume && options_.checkpoint_dir) {
    out_ << fmt::format("no complete checkpoint in {}: starting from step 1\n",
                        *options_.checkpoint_dir);
  }
  if (!options_.metrics_path || steps_done == 0) return;
  // A resumed run keeps the metrics of the steps before it.
  std::ifstream previous(*options_.metrics_path);
  std::string line;
  while (std::getline(previous, line)) {
    const auto entry = nlohmann::json::parse(line, nullptr, false);
    // Steps count from 1, so the checkpoint's are 1 to steps_done.
    if (!entry.is_discarded() && entry.is_object() && entry.value("step", int64_t{0}) >= 1 &&
        entry["step"].get<int64_t>() <= steps_done) {
      metrics_.push_back(entry);
    }
  }
}

void TrainProgress::step_done(const runtime::StepRecord& step) {
  if (!startup_.contains("first_step_done")) {
    mark_startup("first_step_done");
    startup_["format"] = report::kStartupFormat;
    if (options_.startup_record_path) {
      write_file_atomically(*options_.startup_record_path, startup_.dump(2) + "\n");
    }
  }
  total_seconds_ += step.seconds;
  const int64_t done = step.step + 1 - first_step_;
  const double mean_seconds = total_seconds_ / static_cast<double>(done);
  const double tokens = static_cast<double>(options_.tokens_per_step);
  out_ << fmt::format(
              "step {:>{}}/{}  loss {:.4f}{}  {:.0f} tokens/s  {:.3f} s/step  ETA {}{}\n",
              step.step + 1, std::to_string(options_.steps).size(), options_.steps, step.loss,
              options_.lr_varies ? fmt::format("  lr {:.3g}", step.lr) : "", tokens / step.seconds,
              step.seconds,
              format_eta(mean_seconds * static_cast<double>(options_.steps - step.step - 1)),
              step.skipped ? fmt::format("  skipped (loss scale {:g})", step.loss_scale) : "")
       << std::flush;
  // Every step number a user reads counts from 1, as the step lines do.
  nlohmann::json metrics{{"step", step.step + 1},
                         {"loss", step.loss},
                         {"grad_norm", step.grad_norm},
                         {"lr", step.lr},
                         {"seconds", step.seconds},
                         {"tokens_per_s", tokens / step.seconds},
                         {"time", epoch_seconds(std::chrono::system_clock::now())}};
  if (step.loss_scale > 0) {
    metrics["loss_scale"] = step.loss_scale;
    metrics["skipped"] = step.skipped;
  }
  // Every process builds a TrainProgress; rank 0's alone hears of steps and writes events.
  if (options_.tensorboard_dir && !tensorboard_) tensorboard_.emplace(*options_.tensorboard_dir);
  if (tensorboard_) {
    // Steps counted from 1, as the step lines count them.
    const double now = metrics["time"].get<double>();
    const int64_t at = step.step + 1;
    tensorboard_->add_scalar("train/loss", step.loss, at, now);
    tensorboard_->add_scalar("train/learning_rate", step.lr, at, now);
    tensorboard_->add_scalar("train/grad_norm", step.grad_norm, at, now);
    tensorboard_->add_scalar("train/step_time_s", step.seconds, at, now);
    tensorboard_->add_scalar("train/tokens_per_s", tokens / step.seconds, at, now);
    if (step.loss_scale > 0) tensorboard_->add_scalar("train/loss_scale", step.loss_scale, at, now);
    if (step.device_peak_bytes > 0) {
      tensorboard_->add_scalar("memory/rank0_device_peak_bytes", step.device_peak_bytes, at, now);
    }
  }
  metrics_.push_back(std::move(metrics));
}

void TrainProgress::evaluated(int64_t step, double validation_loss) {
  const double perplexity = std::exp(validation_loss);
  out_ << fmt::format("validation after step {}: loss {:.4f}, perplexity {:.4g}\n", step + 1,
                      validation_loss, perplexity)
       << std::flush;
  // Beside the step's own metrics, in its line.
  if (!metrics_.empty() && metrics_.back().value("step", int64_t{-1}) == step + 1) {
    metrics_.back()["validation_loss"] = validation_loss;
    metrics_.back()["validation_perplexity"] = perplexity;
  }
  if (tensorboard_) {
    const double now = epoch_seconds(std::chrono::system_clock::now());
    tensorboard_->add_scalar("validation/loss", validation_loss, step + 1, now);
    tensorboard_->add_scalar("validation/perplexity", perplexity, step + 1, now);
  }
}

void TrainProgress::checkpoint_saved(int64_t /*steps_done*/, double save_seconds) {
  last_save_seconds_ = save_seconds;
  write_metrics();  // the metrics so far survive with the checkpoint
}

void TrainProgress::stopped(int signal_number, int64_t steps_done) {
  write_metrics();
  out_ << fmt::format("stopped by {} after step {}{}\n", signal_name(signal_number), steps_done,
                      options_.checkpoint_dir ? fmt::format("; checkpoint of step {} in {}",
                                                            steps_done, *options_.checkpoint_dir)
                                              : "")
       << std::flush;
}

bool TrainProgress::step_measured(int64_t step, const std::vector<double>& compute) {
  // The run's first step warms caches and allocators: not a speed.
  if (!adapter_ || step == first_step_) return false;
  // What a switch costs, judged by this run's own: a save that every process waits for as
  // it ends, and a start as this one's, from rank 0's process starting to its first step
  // done (libraries loaded, processes joined, layers built, checkpoint loaded, warm-up).
  const double started = startup_.value("process_started", startup_.value("reporter_created", 0.0));
  const double startup = startup_.value("first_step_done", 0.0) - started;
  return adapter_->measured(step, compute, last_save_seconds_ + startup);
}

bool TrainProgress::hand_over_after_checkpoint(int64_t steps_done) {
  if (!handover_dir_) return false;
  handed_over_for_ = elastic::handover_requested(*handover_dir_);
  if (!handed_over_for_) return false;
  out_ << fmt::format("the launcher asks for the run to end after the checkpoint of step {}: {}\n",
                      steps_done, *handed_over_for_)
       << std::flush;
  return true;
}

void TrainProgress::switching(int64_t steps_done) {
  write_metrics();
  out_ << fmt::format("switching plans after step {}; checkpoint of step {} in {}\n", steps_done,
                      steps_done, options_.checkpoint_dir.value_or("?"))
       << std::flush;
}

void TrainProgress::write_metrics() const {
  if (!options_.metrics_path) return;
  std::string lines;
  for (const auto& m : metrics_) lines += m.dump() + "\n";
  write_file_atomically(*options_.metrics_path, lines);
}

}  // namespace hyperpipe::cli
