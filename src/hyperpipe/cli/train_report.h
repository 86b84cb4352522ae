// What `hyperpipe train` prints and writes around the runtime's steps: a progress line per
// step, the metrics file (kept whole at every checkpoint), and at the end the simulator's
// prediction for the plan against the measured iteration, the replay with the run's own
// compute, and the measured and predicted timelines. No libtorch: the runtime hands over
// plain records (runtime/train_record.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/common/tensorboard_events.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/elastic/plan_adapter.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/runtime/train_record.h"

namespace hyperpipe::cli {

struct TrainReportOptions {
  int64_t steps = 0;                        // of the whole run
  int64_t tokens_per_step = 0;              // global batch × sequence length
  std::optional<std::string> metrics_path;  // JSON lines, one per step
  // TensorBoard's event file of the steps' scalars goes in this directory (--tensorboard).
  std::optional<std::string> tensorboard_dir;
  // The measured timeline of the traced step as a Chrome trace, an SVG, a JSON document;
  // beside each (NAME.predicted.EXT) the simulator's prediction for the same plan.
  std::optional<std::string> trace_path;
  std::optional<std::string> svg_path;
  std::optional<std::string> timeline_path;
  std::optional<std::string> checkpoint_dir;  // named in the messages
  bool resume = false;
  // Whether the processes ran on the plan's GPUs (--device cuda): without profiles, only
  // then is the prediction (of the GPU types' datasheets) one of the run.
  bool on_gpus = false;
  // --format json: the report prints nothing; the caller prints training_summary().
  bool json = false;
  // --startup-record: when the run joined, built its layers, loaded its checkpoint and
  // finished its first step (kStartupFormat), written after that step.
  std::optional<std::string> startup_record_path;
  // What runs (run_summary.h): the lines printed before the first step, and the precision
  // and recomputation repeated in the final report.
  std::string header;
  std::string precision;
  std::string recomputation;
  // Whether the learning rate changes from step to step (the step lines show it then).
  bool lr_varies = false;
};

inline constexpr const char* kStartupFormat = "hyperpipe.startup/1";

inline constexpr const char* kTrainingFormat = "hyperpipe.training/1";

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
  void write_metrics() const;

 private:
  TrainReportOptions options_;
  std::ostream& out_;
  std::vector<nlohmann::json> metrics_;  // resumed steps' first
  int64_t first_step_ = 0;
  double total_seconds_ = 0;
  // Start-up: the layers built, redrawn on a terminal, else a line now and then.
  std::optional<ProgressLine> building_;
  std::chrono::steady_clock::time_point last_line_;
  // Start-up milestones, seconds since the Unix epoch (comparable across processes).
  nlohmann::json startup_ = nlohmann::json::object();
  std::unique_ptr<elastic::PlanAdapter> adapter_;
  std::optional<TensorBoardWriter> tensorboard_;
  std::optional<std::string> handover_dir_;
  std::optional<std::string> handed_over_for_;
  double last_save_seconds_ = 0;  // rank 0's part of the last checkpoint, copied and written
  void mark_startup(const char* milestone);
};

// "run/measured.svg" → "run/measured.predicted.svg".
std::string predicted_path(const std::string& path);

// "42 s", "3 min 05 s".
std::string format_eta(double seconds);

// Every run checks the cost model: the simulator's iteration for the plan (with
// `profiles`, else the cost model's estimates) against the median measured step, and, when
// the record has the traced step's timeline, the replay with that step's compute, the
// timelines written and compared device group by group. Writes METRICS.prediction.json
// and returns its document, with the comparison (hyperpipe.comparison/1) as `comparison`
// when there is one; null on ranks other than 0 or a run without steps.
nlohmann::json report_prediction(const runtime::TrainRecord& record, const plan::Plan& plan,
                                 const model::Model& model, const cluster::Cluster& cluster,
                                 const cost::ProfileDb* profiles, const TrainReportOptions& options,
                                 std::ostream& out);

// The run as one "hyperpipe.training/1" document (docs/formats.md): its steps, the files
// it wrote and `prediction` (report_prediction's).
nlohmann::json training_summary(const runtime::TrainRecord& record,
                                const TrainReportOptions& options, nlohmann::json prediction);

}  // namespace hyperpipe::cli
