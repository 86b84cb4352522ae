// What a training run reports at its end: the simulator's prediction for the plan against
// the measured iteration, the replay with the run's own compute, the measured and
// predicted timelines compared, and the run as one "hyperpipe.training/1" document; and
// the options that name what a run writes. No libtorch: the runtime hands over plain
// records (runtime/train_record.h). The progress lines are the CLI's (cli/train_progress.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/runtime/train_record.h"

namespace hyperpipe::report {

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

// "run/measured.svg" → "run/measured.predicted.svg".
std::string predicted_path(const std::string& path);

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

}  // namespace hyperpipe::report
