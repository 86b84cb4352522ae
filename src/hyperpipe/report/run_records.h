// What a training run keeps of itself beside the lines it prints, on rank 0: the metrics
// file (a JSON line per step, written whole at every checkpoint; a resumed run keeps the
// steps before its checkpoint), TensorBoard's events of the steps' scalars, and its
// start-up milestones (kStartupFormat), written once the first step is done.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/common/tensorboard_events.h"
#include "hyperpipe/report/training_report.h"
#include "hyperpipe/runtime/train_record.h"

namespace hyperpipe::report {

class RunRecords {
 public:
  // Marks the process's start (where the system tells it) and this moment.
  explicit RunRecords(const TrainReportOptions& options);

  // Start-up milestone `name` reached now (seconds since the Unix epoch: comparable
  // across processes).
  void mark(const char* milestone);
  // The run starts after `steps_done` steps (from `checkpoint`, where it resumed one):
  // the metrics of those steps are read back from the metrics file.
  void started(const std::optional<std::string>& checkpoint, int64_t steps_done);
  // A step's metrics and events; the first writes the start-up record.
  void step_done(const runtime::StepRecord& step);
  // The validation loss after step `step` (0-based), beside that step's metrics.
  void evaluated(int64_t step, double validation_loss);
  void write_metrics() const;

  // Tokens a second of a step that took `seconds`.
  double tokens_per_s(double seconds) const;
  // From the process's start to its first step done (what starting again costs).
  double startup_seconds() const;
  int64_t first_step() const { return first_step_; }
  const std::vector<nlohmann::json>& metrics() const { return metrics_; }

 private:
  TrainReportOptions options_;
  std::vector<nlohmann::json> metrics_;  // resumed steps' first
  int64_t first_step_ = 0;
  nlohmann::json startup_ = nlohmann::json::object();
  std::optional<TensorBoardWriter> tensorboard_;
};

}  // namespace hyperpipe::report
