// What a training run says about itself, at its start and in its final report: the plan
// it runs (stages, schedule, micro-batches), its precision (and that of the master
// weights), the recomputation of each device group, and every file it writes. A run that
// trains in bf16 says so; a chart written beside the one asked for is named.
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/report/training_report.h"
#include "hyperpipe/training/lr_schedule.h"

namespace hyperpipe::report {

// The lines printed before the first step: "training M on C with PLAN: …", "precision: …",
// "recomputation: …", and "writes: …" when the run writes files.
std::string run_header(const plan::Plan& plan, const std::string& plan_path,
                       const model::Model& model, const std::string& cluster_name,
                       const std::string& run_dtype, const TrainReportOptions& files);

// "bf16 compute with fp32 master weights, gradients and AdamW state (mixed precision)".
std::string precision_text(const std::string& run_dtype);

// "none", "full on every device group", or per group "none, selective, full".
std::string recomputation_text(const plan::Plan& plan);

// "learning rate: 0.001 after 100 steps of warm-up from 0, cosine decay to 1e-05 at step
// 1000"; "" for a rate that never changes.
std::string learning_rate_text(const training::LrSchedule& lr);

// One file (or folder) a run writes.
struct RunFile {
  std::string what;  // "metrics (JSON lines)"
  std::string path;
};

// The files a run with these options writes, in the order of the options; the timelines
// (and their predicted twins) only when `traced` (the run recorded a step's timeline).
std::vector<RunFile> run_files(const TrainReportOptions& options, bool traced);

// The final report's list, a line per file: "  metrics (JSON lines): out/m.jsonl".
std::string files_written_text(const std::vector<RunFile>& files);

}  // namespace hyperpipe::report
