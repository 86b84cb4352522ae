// What `hyperpipe train` prints around the runtime's steps, on rank 0: the start-up lines,
// a progress line per step; what the run keeps of itself (metrics, TensorBoard, start-up
// record) through report/run_records.h; and the hooks an elastic run listens on (train
// --adapt, --hand-over-on-request). No libtorch: the runtime calls it with plain records.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/elastic/plan_adapter.h"
#include "hyperpipe/report/run_records.h"
#include "hyperpipe/report/training_report.h"
#include "hyperpipe/runtime/train_record.h"

namespace hyperpipe::cli {

using report::TrainReportOptions;

// Rank 0's observer: the progress lines and the metrics file.
class TrainProgress : public runtime::TrainObserver {
 public:
  TrainProgress(TrainReportOptions options, std::ostream& out);

  void joined(int processes, double seconds) override;
  void layer_built(int built, int total) override;
  void started(const std::optional<std::string>& checkpoint, int64_t steps_done) override;
  void step_done(const runtime::StepRecord& step) override;
  void evaluated(int64_t step, double validation_loss) override;
  void checkpoint_saved(int64_t steps_done, double save_seconds) override;
  void stopped(int signal_number, int64_t steps_done) override;
  bool step_measured(int64_t step, const std::vector<double>& compute) override;
  bool hand_over_after_checkpoint(int64_t steps_done) override;
  void switching(int64_t steps_done) override;

  // train --adapt: the adapter hears each step's compute.
  void adapt_with(std::unique_ptr<elastic::PlanAdapter> adapter) { adapter_ = std::move(adapter); }
  // train --hand-over-on-request: after each checkpoint, end if the elastic launcher asks
  // (elastic/joins.h) in `elastic_dir`.
  void hand_over_on_request(std::string elastic_dir) { handover_dir_ = std::move(elastic_dir); }
  // Why the run handed over at the launcher's request, if it did.
  const std::optional<std::string>& handed_over_for() const { return handed_over_for_; }

  // Writes the metrics file (at the end of a run that ran every step).
  void write_metrics() const { records_.write_metrics(); }

 private:
  TrainReportOptions options_;
  std::ostream& out_;
  report::RunRecords records_;
  double total_seconds_ = 0;
  // Start-up: the layers built, redrawn on a terminal, else a line now and then.
  std::optional<ProgressLine> building_;
  std::chrono::steady_clock::time_point last_line_;
  std::unique_ptr<elastic::PlanAdapter> adapter_;
  std::optional<std::string> handover_dir_;
  std::optional<std::string> handed_over_for_;
  double last_save_seconds_ = 0;  // rank 0's part of the last checkpoint, copied and written
};

}  // namespace hyperpipe::cli
