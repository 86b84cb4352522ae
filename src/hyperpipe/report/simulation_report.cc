#include "hyperpipe/report/simulation_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/report/memory_breakdown.h"
#include "hyperpipe/report/table.h"
#include "hyperpipe/sim/memory_verdict.h"

namespace hyperpipe::report {

using nlohmann::json;

json simulation_report(const plan::Plan& plan, const sim::PlanSimulation& simulation,
                       const std::string& model_name, const std::string& cluster_name,
                       int64_t seq_len) {
  json stages = json::array();
  for (const auto& stage : simulation.stages) {
    stages.push_back({{"pipeline", stage.pipeline},
                      {"stage", stage.stage},
                      {"rank", stage.rank},
                      {"gpu_type", stage.gpu_type},
                      {"devices", stage.devices},
                      {"dp", stage.dp},
                      {"tp", stage.tp},
                      {"layers", {stage.first_layer, stage.end_layer}},
                      {"forward_s", stage.compute.forward},
                      {"backward_input_s", stage.compute.backward_input},
                      {"backward_weight_s", stage.compute.backward_weight},
                      {"recompute_s", stage.compute.recompute},
                      {"source", stage.compute.source()},
                      {"static_memory_bytes",
                       stage.memory.weights + stage.memory.gradients + stage.memory.optimizer},
                      {"activation_bytes_per_micro_batch", stage.memory.activations},
                      {"memory_per_micro_batch", memory_json(stage.memory)},
                      {"replica_sync_s", stage.replica_sync}});
  }
  json ranks = json::array();
  const auto& out = simulation.output;
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    const auto& stats = out.ranks[r];
    ranks.push_back({{"rank", r},
                     {"name", out.timeline.tracks[r].name},
                     {"busy_s", stats.busy},
                     {"bubble_s", stats.bubble},
                     {"comm_wait_s", stats.comm_wait},
                     {"allreduce_s", stats.allreduce},
                     {"replica_sync_s", stats.replica_sync},
                     {"optimizer_s", stats.optimizer},
                     {"peak_in_flight", stats.peak_in_flight},
                     {"peak_memory_bytes", stats.peak_memory_bytes},
                     {"memory_capacity_bytes", simulation.memory_capacity[r]},
                     {"memory_limit_bytes", simulation.memory_limit[r]},
                     {"memory", memory_json(simulation.device_peaks[r])},
                     {"fits", stats.peak_memory_bytes <= simulation.memory_limit[r]}});
  }
  json verdicts = json::array();
  for (const auto& over : sim::over_capacity(simulation)) {
    verdicts.push_back(
        {{"rank", over.rank},
         {"over_bytes", over.over()},
         {"largest_term", over.largest},
         {"breaking_term", over.breaking.empty() ? json(nullptr) : json(over.breaking)},
         {"text", over.text()}});
  }
  json pipelines = json::array();
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    pipelines.push_back({{"schedule", schedule::to_string(pipeline.schedule)},
                         {"chunks", pipeline.chunks},
                         {"micro_batch_size", pipeline.micro_batch_size},
                         {"micro_batches", pipeline.micro_batches},
                         {"stages", pipeline.stages.size()},
                         {"first_rank", simulation.first_rank[p]}});
  }
  return {{"format", kSimulationFormat},
          {"model", model_name},
          {"cluster", cluster_name},
          {"runtime", plan::to_string(plan.runtime)},
          {"p2p", simulation.p2p == sim::P2pMode::blocking ? "blocking" : "async"},
          {"schedule", schedule::to_string(plan.schedule)},
          {"chunks", plan.chunks},
          {"micro_batch_size", plan.micro_batch_size},
          {"micro_batches", plan.micro_batches},
          {"pipelines", pipelines},
          {"layer_numbering", plan::kLayerNumbering},
          {"global_batch", plan.global_batch()},
          {"seq_len", seq_len},
          {"devices", simulation.devices},
          {"iteration_time_s", out.iteration_time},
          {"tokens_per_s", simulation.tokens_per_s},
          {"achieved_flops_per_gpu", simulation.achieved_flops_per_gpu},
          // Not against a GPU type's peak where CPU stand-ins ran (see PlanSimulation).
          {"mfu", simulation.stand_ins ? json(nullptr) : json(simulation.mfu)},
          {"stand_ins", simulation.stand_ins},
          {"estimator", cost::to_string(simulation.estimator)},
          {"stages", stages},
          {"ranks", ranks},
          {"fits", verdicts.empty()},
          {"over_capacity", verdicts}};
}

void print_memory_terms(const json& report, std::ostream& out) {
  std::vector<std::pair<std::string, json>> rows;
  for (const auto& rank : report["ranks"]) rows.emplace_back(rank["name"], rank["memory"]);
  out << "  Peak memory per device by term (docs/formats.md, \"Memory breakdown\"):\n";
  print_memory_table(rows, out, "  ");
  for (const auto& verdict : report["over_capacity"]) {
    out << "  DOES NOT FIT: " << verdict["text"].get<std::string>() << '\n';
  }
}

namespace {

// "stage 2" or, where pipelines run side by side, "pipeline 1 stage 2".
std::string stage_name(const json& stage, bool several_pipelines) {
  const int s = stage["stage"].get<int>();
  return several_pipelines ? fmt::format("pipeline {} stage {}", stage["pipeline"].get<int>(), s)
                           : fmt::format("stage {}", s);
}

}  // namespace

std::string layer_cost_note(const json& report) {
  const bool several = report["pipelines"].size() > 1;
  std::vector<std::string> profiled, estimated, mixed;
  bool interpolated = false;
  for (const auto& stage : report["stages"]) {
    const auto source = stage["source"].get<std::string>();
    const std::string name = stage_name(stage, several);
    if (source == "estimate") {
      estimated.push_back(name);
    } else if (source == "profile+estimate") {
      mixed.push_back(name);
    } else {
      interpolated = interpolated || source != "profile";
      profiled.push_back(name);
    }
  }
  const bool ops = report.value("estimator", "ops") == "ops";
  const std::string how = ops ? "estimated op by op" : "estimated by the roofline";
  const std::string why = ops ? "`hyperpipe describe --estimate` shows the ops, `hyperpipe "
                                "profile` measures the layers"
                              : "`--estimator ops` prices each op instead";
  const std::string measured =
      interpolated ? "profiled (some between the micro-batch sizes measured)" : "profiled";
  if (estimated.empty() && mixed.empty()) return "Layer times: " + measured + " on every stage";
  if (profiled.empty() && mixed.empty()) {
    return fmt::format("Layer times: {} on every stage, no profile ({})", how, why);
  }
  std::string text = "Layer times: ";
  if (!profiled.empty()) text += fmt::format("{} on {}; ", measured, fmt::join(profiled, ", "));
  text += how + " on ";
  if (!estimated.empty()) text += fmt::format("{}", fmt::join(estimated, ", "));
  if (!estimated.empty() && !mixed.empty()) text += " and on ";
  if (!mixed.empty()) text += fmt::format("some layers of {}", fmt::join(mixed, ", "));
  return text + fmt::format(" ({})", why);
}

namespace {

// "12 stages (1f1b), 8 micro-batches of 2" for one pipeline of the report.
std::string pipeline_summary(const json& pipeline) {
  const int chunks = pipeline["chunks"].get<int>();
  return fmt::format("{} ({}{}), {} of {}", counted(pipeline["stages"].get<int>(), "stage"),
                     pipeline["schedule"].get<std::string>(),
                     chunks > 1 ? fmt::format(", {} chunks", chunks) : "",
                     counted(pipeline["micro_batches"].get<int>(), "micro-batch", "micro-batches"),
                     pipeline["micro_batch_size"].get<int64_t>());
}

}  // namespace

void print_simulation_tables(const json& report, std::ostream& out) {
  const auto& pipelines = report["pipelines"];
  const bool several = pipelines.size() > 1;
  const auto framework = plan::parse_framework(report.value("runtime", "hyperpipe"));
  if (framework && *framework != plan::Framework::hyperpipe) {
    const auto& traits = plan::traits(*framework);
    out << fmt::format("As {} ({}) runs it: {} point-to-point exchanges\n", traits.display_name,
                       traits.version,
                       report.value("p2p", "async") == "blocking" ? "blocking" : "asynchronous");
  }
  if (!several) {
    out << fmt::format("{} on {}: {} (global batch {}, seq {})\n\n",
                       report["model"].get<std::string>(), report["cluster"].get<std::string>(),
                       pipeline_summary(pipelines[0]), report["global_batch"].get<int64_t>(),
                       report["seq_len"].get<int64_t>());
  } else {
    out << fmt::format("{} on {}: {} pipelines summing their gradients (global batch {}, seq {})\n",
                       report["model"].get<std::string>(), report["cluster"].get<std::string>(),
                       pipelines.size(), report["global_batch"].get<int64_t>(),
                       report["seq_len"].get<int64_t>());
    for (size_t p = 0; p < pipelines.size(); ++p) {
      out << fmt::format("  pipeline {}: {}\n", p, pipeline_summary(pipelines[p]));
    }
    out << '\n';
  }
  std::vector<std::string> headers{">Stage", "GPU", "Devices", "dp×tp", "Layers",
                                   ">F",     ">B",  ">W",      "Source"};
  if (several) headers.insert(headers.begin(), ">Pipeline");
  Table stages(headers);
  for (const auto& stage : report["stages"]) {
    const auto& devices = stage["devices"];
    std::vector<std::string> row{
        std::to_string(stage["stage"].get<int>()),
        stage["gpu_type"],
        plan::format_devices(devices.get<std::vector<int>>()),
        fmt::format("{}×{}", stage["dp"].get<int>(), stage["tp"].get<int>()),
        plan::format_layers(stage["layers"][0].get<int>(), stage["layers"][1].get<int>()),
        format_duration(stage["forward_s"].get<double>()),
        format_duration(stage["backward_input_s"].get<double>() +
                        stage["recompute_s"].get<double>()),
        format_duration(stage["backward_weight_s"].get<double>()),
        stage["source"]};
    if (several) row.insert(row.begin(), std::to_string(stage["pipeline"].get<int>()));
    stages.add_row(row);
  }
  stages.print(out, "  ");
  int chain_layers = 0;
  for (const auto& stage : report["stages"]) {
    chain_layers = std::max(chain_layers, stage["layers"][1].get<int>());
  }
  out << "  " << plan::layer_numbering_note(chain_layers) << '\n';
  out << "  " << layer_cost_note(report) << "\n\n";
  std::vector<std::string> rank_headers{
      "Device group", ">Busy",      ">Bubble",      ">Comm wait", ">All-reduce",
      ">Optimizer",   ">In flight", ">Peak memory", ">Limit",     ""};
  if (several) rank_headers.insert(rank_headers.begin() + 5, ">Replica sync");
  Table ranks(rank_headers);
  bool overflow = false;
  for (const auto& rank : report["ranks"]) {
    const bool fits = rank["fits"].get<bool>();
    overflow = overflow || !fits;
    std::vector<std::string> row{rank["name"],
                                 format_duration(rank["busy_s"].get<double>()),
                                 format_duration(rank["bubble_s"].get<double>()),
                                 format_duration(rank["comm_wait_s"].get<double>()),
                                 format_duration(rank["allreduce_s"].get<double>()),
                                 format_duration(rank["optimizer_s"].get<double>()),
                                 std::to_string(rank["peak_in_flight"].get<int>()),
                                 format_bytes(rank["peak_memory_bytes"].get<double>()),
                                 format_bytes(rank["memory_limit_bytes"].get<double>()),
                                 fits ? "" : "DOES NOT FIT"};
    if (several) {
      row.insert(row.begin() + 5, format_duration(rank["replica_sync_s"].get<double>()));
    }
    ranks.add_row(row);
  }
  ranks.print(out, "  ");
  out << '\n';
  print_memory_terms(report, out);
  out << fmt::format(
      "\nIteration {}: {} tokens/s, {} per {} over {}{}\n",
      format_duration(report["iteration_time_s"].get<double>()),
      format_count(report["tokens_per_s"].get<double>()),
      format_flop_rate(report["achieved_flops_per_gpu"].get<double>()),
      report["mfu"].is_null() ? "process" : "GPU",
      report["mfu"].is_null() ? counted(report["devices"].get<int>(), "CPU stand-in") +
                                    " (no MFU: their peak is this host's)"
                              : counted(report["devices"].get<int>(), "GPU"),
      report["mfu"].is_null() ? ""
                              : fmt::format(", MFU {:.1f}%", 100 * report["mfu"].get<double>()));
  if (overflow) {
    out << "Warning: some device groups need more memory than a plan may use of theirs; the "
           "plan would not run as written (add recomputation, stages or devices).\n";
  }
}

}  // namespace hyperpipe::report
