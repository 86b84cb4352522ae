#include "hyperpipe/report/catalogue_report.h"

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {

nlohmann::json models_document() {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& entry : model::model_catalogue()) {
    const auto& c = entry.config;
    models.push_back({{"name", c.name},
                      {"aliases", entry.aliases},
                      {"flavour", to_string(c.flavour)},
                      {"total_params", model::Model(c).total_params()},
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
  }
  return {{"format", kModelsFormat}, {"models", models}};
}

void print_models(const nlohmann::json& document, std::ostream& out) {
  Table table({"Name", "Flavour", ">Params", ">Layers", ">Hidden", ">Heads", ">KV", ">FFN",
               ">Vocab", ">Seq", "Dtype", "Aliases"});
  const auto integer = [](const nlohmann::json& value) {
    return std::to_string(value.get<int64_t>());
  };
  for (const auto& m : document["models"]) {
    table.add_row({m["name"], m["flavour"], format_count(m["total_params"].get<double>()),
                   integer(m["layers"]), integer(m["hidden"]), integer(m["heads"]),
                   integer(m["kv_heads"]), integer(m["ffn_hidden"]), integer(m["vocab"]),
                   integer(m["seq_len"]), m["dtype"], m["aliases"]});
  }
  table.print(out);
  out << "\nUse a name with --model, or give a model .yaml or a Hugging Face config.json.\n";
}

nlohmann::json devices_document(const std::vector<cluster::GpuType>& types) {
  nlohmann::json devices = nlohmann::json::array();
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
  }
  return {{"format", kDevicesFormat}, {"gpu_types", devices}};
}

void print_devices(const nlohmann::json& document, std::ostream& out) {
  Table table({"Type", ">Memory", ">Mem BW", ">FP32", ">TF32", ">FP16", ">BF16", "Source"});
  for (const auto& type : document["gpu_types"]) {
    const auto& peak = type["peak_flops"];
    table.add_row({type["name"], format_bytes(type["memory_bytes"].get<double>()),
                   format_bandwidth(type["memory_bandwidth_bytes_per_s"].get<double>()),
                   format_flop_rate(peak["fp32"].get<double>()),
                   format_flop_rate(peak["tf32"].get<double>()),
                   format_flop_rate(peak["fp16"].get<double>()),
                   format_flop_rate(peak["bf16"].get<double>()), type["source"]});
  }
  table.print(out);
  out << "\nPeaks are dense (no sparsity). A cluster file can add or change types under "
         "gpu_types.\n";
}

}  // namespace hyperpipe::report
