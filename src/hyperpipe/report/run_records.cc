#include "hyperpipe/report/run_records.h"

#include <chrono>
#include <cmath>
#include <fstream>

#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/process_start.h"

namespace hyperpipe::report {
namespace {

double now_seconds() {
  return epoch_seconds(std::chrono::system_clock::now());
}

}  // namespace

RunRecords::RunRecords(const TrainReportOptions& options) : options_(options) {
  if (const auto started = process_start_time()) startup_["process_started"] = *started;
  mark("reporter_created");
}

void RunRecords::mark(const char* milestone) {
  startup_[milestone] = now_seconds();
}

void RunRecords::started(const std::optional<std::string>& checkpoint, int64_t steps_done) {
  mark("checkpoint_loaded");
  startup_["steps_done"] = steps_done;
  startup_["checkpoint"] = checkpoint ? nlohmann::json(*checkpoint) : nlohmann::json(nullptr);
  first_step_ = steps_done;
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

double RunRecords::tokens_per_s(double seconds) const {
  return static_cast<double>(options_.tokens_per_step) / seconds;
}

void RunRecords::step_done(const runtime::StepRecord& step) {
  if (!startup_.contains("first_step_done")) {
    mark("first_step_done");
    startup_["format"] = kStartupFormat;
    if (options_.startup_record_path) {
      write_file_atomically(*options_.startup_record_path, startup_.dump(2) + "\n");
    }
  }
  // Every step number a user reads counts from 1, as the step lines do.
  const int64_t at = step.step + 1;
  nlohmann::json metrics{{"step", at},
                         {"loss", step.loss},
                         {"grad_norm", step.grad_norm},
                         {"lr", step.lr},
                         {"seconds", step.seconds},
                         {"tokens_per_s", tokens_per_s(step.seconds)},
                         {"time", now_seconds()}};
  if (step.loss_scale > 0) {
    metrics["loss_scale"] = step.loss_scale;
    metrics["skipped"] = step.skipped;
  }
  if (options_.tensorboard_dir && !tensorboard_) tensorboard_.emplace(*options_.tensorboard_dir);
  if (tensorboard_) {
    const double now = metrics["time"].get<double>();
    tensorboard_->add_scalar("train/loss", step.loss, at, now);
    tensorboard_->add_scalar("train/learning_rate", step.lr, at, now);
    tensorboard_->add_scalar("train/grad_norm", step.grad_norm, at, now);
    tensorboard_->add_scalar("train/step_time_s", step.seconds, at, now);
    tensorboard_->add_scalar("train/tokens_per_s", tokens_per_s(step.seconds), at, now);
    if (step.loss_scale > 0) tensorboard_->add_scalar("train/loss_scale", step.loss_scale, at, now);
    if (step.device_peak_bytes > 0) {
      tensorboard_->add_scalar("memory/rank0_device_peak_bytes", step.device_peak_bytes, at, now);
    }
  }
  metrics_.push_back(std::move(metrics));
}

void RunRecords::evaluated(int64_t step, double validation_loss) {
  const double perplexity = std::exp(validation_loss);
  // Beside the step's own metrics, in its line.
  if (!metrics_.empty() && metrics_.back().value("step", int64_t{-1}) == step + 1) {
    metrics_.back()["validation_loss"] = validation_loss;
    metrics_.back()["validation_perplexity"] = perplexity;
  }
  if (tensorboard_) {
    const double now = now_seconds();
    tensorboard_->add_scalar("validation/loss", validation_loss, step + 1, now);
    tensorboard_->add_scalar("validation/perplexity", perplexity, step + 1, now);
  }
}

void RunRecords::write_metrics() const {
  if (!options_.metrics_path) return;
  std::string lines;
  for (const auto& m : metrics_) lines += m.dump() + "\n";
  write_file_atomically(*options_.metrics_path, lines);
}

double RunRecords::startup_seconds() const {
  const double started = startup_.value("process_started", startup_.value("reporter_created", 0.0));
  return startup_.value("first_step_done", 0.0) - started;
}

}  // namespace hyperpipe::report
