#include "hyperpipe/report/training_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/statistics.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/report/timeline_comparison.h"
#include "hyperpipe/sim/measured_compute.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::report {

std::string predicted_path(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".predicted" + p.extension().string())).string();
}

namespace {

// The measured and predicted timelines of the traced step, to the files asked for; the
// trace and the chart draw the several steps where the run recorded them.
void write_timelines(const trace::Timeline& measured, const trace::Timeline* measured_steps,
                     const trace::Timeline& predicted, const TrainReportOptions& options) {
  const auto write = [&](const std::optional<std::string>& path, const trace::Timeline& drawn,
                         const auto& render) {
    if (!path) return;
    write_file_atomically(*path, render(drawn));
    write_file_atomically(predicted_path(*path), render(predicted));
  };
  const trace::Timeline& drawn = measured_steps ? *measured_steps : measured;
  write(options.trace_path, drawn,
        [](const trace::Timeline& t) { return trace::chrome_trace(t).dump(); });
  if (options.svg_path) {
    // Several steps are no iteration: their subtitle says what the span is.
    write_file_atomically(*options.svg_path,
                          measured_steps
                              ? trace::svg_gantt(drawn.title,
                                                 "one step after another, " +
                                                     format_duration(drawn.end_time()) + " in all",
                                                 {{"", &drawn}})
                              : trace::svg_gantt(drawn));
    write_file_atomically(predicted_path(*options.svg_path), trace::svg_gantt(predicted));
  }
  write(options.timeline_path, measured,
        [](const trace::Timeline& t) { return trace::timeline_to_json(t).dump(); });
}

}  // namespace

nlohmann::json report_prediction(const runtime::TrainRecord& record, const plan::Plan& plan,
                                 const model::Model& model, const cluster::Cluster& cluster,
                                 const cost::ProfileDb* profiles, const TrainReportOptions& options,
                                 std::ostream& out) {
  if (!record.reporter || record.steps.empty()) return nullptr;
  const cost::CostModel costs(model, cluster, {}, profiles);
  const sim::PlanSimulation simulation = sim::simulate_plan(costs, plan);
  // The median of the steps after the first, which warms caches and allocators.
  std::vector<double> seconds;
  for (const auto& step : record.steps) {
    if (step.step > record.first_step || record.steps.size() == 1) seconds.push_back(step.seconds);
  }
  const double measured = median(seconds);
  const double predicted = simulation.output.iteration_time;
  const double error = predicted / measured - 1;
  nlohmann::json prediction{{"predicted_iteration_s", predicted},
                            {"measured_iteration_s", measured},
                            {"source", profiles ? "profiles" : "estimates"}};
  // Without profiles the prediction is of the GPU types' datasheets: against a run on
  // this host's CPUs (stand-ins, or GPU types trained on the CPU) their ratio means nothing.
  const bool comparable = profiles || (options.on_gpus && !simulation.stand_ins);
  prediction["comparable"] = comparable;
  if (options.json) {
    if (comparable) prediction["relative_error"] = error;
  } else if (comparable) {
    out << fmt::format(
        "\npredicted {:.1f} ms per iteration ({}), measured {:.1f} ms (median of {}): "
        "error {:+.1f}%\n",
        predicted * 1e3, profiles ? "simulator with profiles" : "simulator with estimates",
        measured * 1e3, counted(static_cast<int64_t>(seconds.size()), "step"), 100 * error);
    prediction["relative_error"] = error;
  } else {
    out << fmt::format(
        "\nmeasured {:.1f} ms per iteration (median of {}). No error against the "
        "prediction ({:.1f} ms): without --profiles the simulator costs the GPU types' "
        "datasheets, while this run's processes ran on {}. Profile the host for this "
        "model and cluster (hyperpipe profile --model M --cluster C --out profiles.json) and "
        "pass --profiles profiles.json for a prediction to check.\n",
        measured * 1e3, counted(static_cast<int64_t>(seconds.size()), "step"), predicted * 1e3,
        simulation.stand_ins ? fmt::format("{}'s CPU stand-ins", cluster.name())
                             : "this host's CPUs");
  }
  std::optional<nlohmann::json> comparison;
  if (record.measured_timeline) {
    auto predicted_timeline = simulation.output.timeline;
    predicted_timeline.title =
        fmt::format("{} on {} (predicted)", model.config().name, cluster.name());
    write_timelines(*record.measured_timeline,
                    record.measured_steps ? &*record.measured_steps : nullptr, predicted_timeline,
                    options);
    // What is left when the run's own op times stand in for the profiles': the error of
    // the schedule and communication model alone.
    const sim::MeasuredComputes compute = sim::measured_compute(plan, *record.measured_timeline);
    sim::SimOptions replay;
    replay.measured = &compute;
    const double replayed = sim::simulate_plan(costs, plan, replay).output.iteration_time;
    const double replay_error = replayed / measured - 1;
    if (!options.json) {
      out << fmt::format(
          "replayed with step {}'s measured compute: {:.1f} ms, error {:+.1f}% (the schedule "
          "and communication model alone)\n",
          record.traced_step + 1, replayed * 1e3, 100 * replay_error);
    }
    prediction["replayed_iteration_s"] = replayed;
    prediction["replayed_error"] = replay_error;
    prediction["replayed_step"] = record.traced_step + 1;
    comparison = compare_timelines(predicted_timeline, *record.measured_timeline);
  }
  if (options.metrics_path) {
    write_file_atomically(*options.metrics_path + ".prediction.json", prediction.dump(2));
  }
  if (comparison && !options.json) {
    out << fmt::format("\npredicted against measured in step {}, device group by device group{}:\n",
                       record.traced_step + 1,
                       comparable ? "" : " (memory: times of other devices)");
    print_comparison(*comparison, out, comparable);
  }
  if (comparison) prediction["comparison"] = std::move(*comparison);
  return prediction;
}

nlohmann::json training_summary(const runtime::TrainRecord& record,
                                const TrainReportOptions& options, nlohmann::json prediction) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : record.steps) {
    nlohmann::json entry{{"step", step.step + 1},
                         {"loss", step.loss},
                         {"grad_norm", step.grad_norm},
                         {"lr", step.lr},
                         {"seconds", step.seconds}};
    if (step.loss_scale > 0) {
      entry["loss_scale"] = step.loss_scale;
      entry["skipped"] = step.skipped;
    }
    steps.push_back(std::move(entry));
  }
  nlohmann::json files = nlohmann::json::object();
  if (options.metrics_path) {
    files["metrics"] = *options.metrics_path;
    files["prediction"] = *options.metrics_path + ".prediction.json";
  }
  if (record.measured_timeline) {
    for (const auto& [name, path] :
         {std::pair{"trace", options.trace_path}, std::pair{"svg", options.svg_path},
          std::pair{"timeline", options.timeline_path}}) {
      if (path) files[name] = {{"measured", *path}, {"predicted", predicted_path(*path)}};
    }
  }
  if (options.checkpoint_dir) files["checkpoints"] = *options.checkpoint_dir;
  if (options.tensorboard_dir) files["tensorboard"] = *options.tensorboard_dir;
  nlohmann::json validations = nlohmann::json::array();
  for (const auto& v : record.validations) {
    validations.push_back(
        {{"step", v.step + 1}, {"loss", v.loss}, {"perplexity", std::exp(v.loss)}});
  }
  nlohmann::json summary{{"format", kTrainingFormat},
                         {"tokens_per_step", options.tokens_per_step},
                         {"first_step", record.first_step + 1},
                         {"steps_done", record.steps_done},
                         {"steps", steps},
                         {"validation", validations},
                         {"files", files}};
  if (!options.precision.empty()) summary["precision"] = options.precision;
  if (!options.recomputation.empty()) summary["recomputation"] = options.recomputation;
  if (record.measured_timeline) summary["traced_step"] = record.traced_step + 1;
  if (record.measured_steps) summary["first_traced_step"] = record.first_traced_step + 1;
  if (!prediction.is_null()) summary["prediction"] = std::move(prediction);
  return summary;
}

}  // namespace hyperpipe::report
