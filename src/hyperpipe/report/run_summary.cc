#include "hyperpipe/report/run_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::report {

std::string precision_text(const std::string& run_dtype) {
  if (run_dtype == "bf16" || run_dtype == "fp16") {
    return fmt::format(
        "{} compute with fp32 master weights, gradients and AdamW state (mixed "
        "precision{})",
        run_dtype, run_dtype == "fp16" ? ", dynamic loss scaling" : "");
  }
  if (run_dtype == "fp64") return "fp64 throughout (for exact comparisons, not speed)";
  return run_dtype + " throughout (weights, gradients, AdamW state and compute)";
}

std::string recomputation_text(const plan::Plan& plan) {
  std::vector<std::string> per_group;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    for (const auto& stage : plan.pipeline(p).stages) {
      per_group.emplace_back(model::to_string(stage.recompute));
    }
  }
  const bool same = std::all_of(per_group.begin(), per_group.end(),
                                [&](const std::string& r) { return r == per_group.front(); });
  if (same && per_group.front() == "none") return "none";
  if (same) return per_group.front() + " on every device group";
  return fmt::format("per device group in plan order: {}", fmt::join(per_group, ", "));
}

std::string run_header(const plan::Plan& plan, const std::string& plan_path,
                       const model::Model& model, const std::string& cluster_name,
                       const std::string& run_dtype, const TrainReportOptions& files) {
  const std::string pipelines =
      plan.pipeline_count() > 1
          ? fmt::format(" (+ {})", counted(plan.pipeline_count() - 1, "pipeline side by side",
                                           "pipelines side by side"))
          : "";
  std::string text = fmt::format(
      "training {} on {} with {}: {}{}, schedule {}{}, {} of {} per iteration\n",
      model.config().name, cluster_name, std::filesystem::path(plan_path).filename().string(),
      counted(plan.ranks(), "device group"), pipelines, schedule::to_string(plan.schedule),
      plan.chunks > 1 ? fmt::format(" ({} chunks per device group)", plan.chunks) : "",
      counted(plan.micro_batches, "micro-batch", "micro-batches"),
      counted(plan.micro_batch_size, "sequence"));
  text += "precision: " + precision_text(run_dtype) + "\n";
  text += "recomputation: " + recomputation_text(plan) + "\n";
  const auto written = run_files(files, /*traced=*/true);
  if (!written.empty()) {
    std::vector<std::string> parts;
    for (const auto& file : written) parts.push_back(fmt::format("{} to {}", file.what, file.path));
    text += fmt::format("writes: {}\n", fmt::join(parts, "; "));
  }
  return text;
}

std::string learning_rate_text(const training::LrSchedule& lr) {
  if (!lr.varies()) return "";
  return fmt::format("learning rate: {:g}{}{}\n", lr.max_lr,
                     lr.warmup_iters > 0 ? fmt::format(" after {} of warm-up from 0",
                                                       counted(lr.warmup_iters, "step"))
                                         : "",
                     lr.style == training::LrDecayStyle::constant
                         ? ""
                         : fmt::format(", {} decay to {:g} at step {}",
                                       training::to_string(lr.style), lr.min_lr, lr.decay_iters));
}

std::vector<RunFile> run_files(const TrainReportOptions& options, bool traced) {
  std::vector<RunFile> files;
  if (options.metrics_path) {
    files.push_back({"metrics (JSON lines)", *options.metrics_path});
    files.push_back(
        {"prediction against the measured", *options.metrics_path + ".prediction.json"});
  }
  if (options.tensorboard_dir) {
    files.push_back({"TensorBoard events (a file in)", *options.tensorboard_dir});
  }
  if (options.checkpoint_dir) files.push_back({"checkpoints", *options.checkpoint_dir});
  if (traced) {
    for (const auto& [what, path] :
         {std::pair{"Chrome trace", options.trace_path}, std::pair{"SVG chart", options.svg_path},
          std::pair{"timeline (JSON)", options.timeline_path}}) {
      if (!path) continue;
      files.push_back({fmt::format("measured {}", what), *path});
      files.push_back({fmt::format("predicted {}", what), predicted_path(*path)});
    }
  }
  if (options.startup_record_path) {
    files.push_back({"start-up record", *options.startup_record_path});
  }
  return files;
}

std::string files_written_text(const std::vector<RunFile>& files) {
  if (files.empty()) return "";
  size_t width = 0;
  for (const auto& file : files) width = std::max(width, file.what.size());
  std::string text = "\nfiles written:\n";
  for (const auto& file : files) {
    text += fmt::format("  {:<{}}  {}\n", file.what + ":", width + 1, file.path);
  }
  return text;
}

}  // namespace hyperpipe::report
