#include "hyperpipe/cli/catalogue_commands.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::cli {

using report::Table;
namespace {

constexpr const char* kModelsFormat = "hyperpipe.models/1";
constexpr const char* kDevicesFormat = "hyperpipe.devices/1";

}  // namespace

void print_models(std::ostream& out, OutputFormat format) {
  nlohmann::json models = nlohmann::json::array();
  Table table({"Name", "Flavour", ">Params", ">Layers", ">Hidden", ">Heads", ">KV", ">FFN",
               ">Vocab", ">Seq", "Dtype", "Aliases"});
  for (const auto& entry : model::model_catalogue()) {
    const auto& c = entry.config;
    const model::Model built(c);
    models.push_back({{"name", c.name},
                      {"aliases", entry.aliases},
                      {"flavour", to_string(c.flavour)},
                      {"total_params", built.total_params()},
                      {"published_params", entry.published_params},
                      {"layers", c.layers},
                      {"hidden", c.hidden},
                      {"heads", c.heads},
                      {"kv_heads", c.kv_heads},
                      {"ffn_hidden", c.ffn_hidden},
                      {"vocab", c.vocab},
                      {"seq_len", c.seq_len},
                      {"dtype", to_string(c.dtype)},
                      {"source", entry.source}});
    table.add_row({c.name, std::string(to_string(c.flavour)),
                   format_count(static_cast<double>(built.total_params())),
                   std::to_string(c.layers), std::to_string(c.hidden), std::to_string(c.heads),
                   std::to_string(c.kv_heads), std::to_string(c.ffn_hidden),
                   std::to_string(c.vocab), std::to_string(c.seq_len),
                   std::string(to_string(c.dtype)), entry.aliases});
  }
  if (format == OutputFormat::json) {
    out << nlohmann::json{{"format", kModelsFormat}, {"models", models}}.dump(2) << '\n';
    return;
  }
  table.print(out);
  out << "\nUse a name with --model, or give a model .yaml or a Hugging Face config.json.\n";
}

void print_devices(std::ostream& out, OutputFormat format,
                   const std::optional<std::string>& cluster_name_or_path) {
  std::vector<cluster::GpuType> types = cluster::gpu_catalogue();
  if (cluster_name_or_path) types = cluster::load_cluster(*cluster_name_or_path).gpu_types();
  nlohmann::json devices = nlohmann::json::array();
  Table table({"Type", ">Memory", ">Mem BW", ">FP32", ">TF32", ">FP16", ">BF16", "Source"});
  for (const auto& type : types) {
    nlohmann::json entry{{"name", type.name},
                         {"memory_bytes", static_cast<int64_t>(type.memory_bytes)},
                         {"memory_bandwidth_bytes_per_s", type.memory_bandwidth},
                         {"peak_flops",
                          {{"fp32", type.peak.fp32},
                           {"tf32", type.peak.tf32},
                           {"fp16", type.peak.fp16},
                           {"bf16", type.peak.bf16}}},
                         {"source", type.source}};
    if (type.speed) entry["speed"] = *type.speed;
    if (type.compute_capability > 0) entry["compute_capability"] = type.compute_capability;
    if (type.multiprocessors > 0) entry["multiprocessors"] = type.multiprocessors;
    if (type.matmul_efficiency) entry["matmul_efficiency"] = *type.matmul_efficiency;
    if (type.memory_efficiency) entry["memory_efficiency"] = *type.memory_efficiency;
    devices.push_back(entry);
    table.add_row({type.name, format_bytes(type.memory_bytes),
                   format_bandwidth(type.memory_bandwidth), format_flop_rate(type.peak.fp32),
                   format_flop_rate(type.peak.tf32), format_flop_rate(type.peak.fp16),
                   format_flop_rate(type.peak.bf16), type.source});
  }
  if (format == OutputFormat::json) {
    out << nlohmann::json{{"format", kDevicesFormat}, {"gpu_types", devices}}.dump(2) << '\n';
    return;
  }
  table.print(out);
  out << "\nPeaks are dense (no sparsity). A cluster file can add or change types under "
         "gpu_types.\n";
}

void add_models_command(CLI::App& app, std::ostream& out) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::table);
  CLI::App* models = app.add_subcommand("models", "List the built-in model catalogue");
  add_format_option(*models, *format);
  models->footer("Examples:\n  hyperpipe models\n  hyperpipe models --format json");
  models->callback([format, &out] { print_models(out, *format); });
}

void add_devices_command(CLI::App& app, std::ostream& out) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::table);
  auto cluster = std::make_shared<std::optional<std::string>>();
  CLI::App* devices = app.add_subcommand("devices", "List GPU types and their datasheet figures");
  devices->add_option("--cluster,-c", *cluster,
                      "Also show the types a cluster file adds or changes");
  add_format_option(*devices, *format);
  devices->footer(
      "Examples:\n  hyperpipe devices\n  hyperpipe devices --cluster my-cluster.yaml --format "
      "json");
  devices->callback([format, cluster, &out] { print_devices(out, *format, *cluster); });
}

}  // namespace hyperpipe::cli
