#include "hyperpipe/report/estimate_report.h"

#include <fmt/format.h>

#include <vector>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/nearest_name.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/cost/op_estimate.h"
#include "hyperpipe/model/layer_ops.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {
namespace {

using nlohmann::json;

std::string shape_text(const model::LayerOp& op) {
  switch (op.kind) {
    case model::OpKind::product:
      return op.batch > 1 ? fmt::format("{} × {}×{}×{}", op.batch, op.m, op.n, op.k)
                          : fmt::format("{}×{}×{}", op.m, op.n, op.k);
    case model::OpKind::fused_attention:
      return fmt::format("{} × s {} d {}", op.batch, op.m, op.k);
    case model::OpKind::memory:
      break;
  }
  return "";
}

// The layers the estimate covers: one of each kind, or the one asked for.
std::vector<int> chosen_layers(const model::Model& model, const std::string& layer) {
  const int head = model.num_layers() - 1;
  if (layer == "embedding") return {0};
  if (layer == "block") return {1};
  if (layer == "head") return {head};
  return {0, 1, head};
}

json layer_estimate(const cost::CostModel& costs, const cluster::GpuType& type, int index,
                    const model::Workload& work) {
  const model::Layer& layer = costs.model().layers().at(index);
  const auto& config = costs.model().config();
  const double memory_efficiency = costs.options().memory_efficiency;
  json ops = json::array();
  const auto list = model::layer_ops(layer, work);
  for (const auto& op : list) {
    const cost::OpTime time = cost::op_time(op, type, config, memory_efficiency);
    json entry{{"name", op.name},
               {"pass", model::to_string(op.pass)},
               {"kind", model::to_string(op.kind)},
               {"shape", shape_text(op)},
               {"flops", op.flops},
               {"bytes", op.bytes},
               {"kernels", op.kernels},
               {"bound", cost::to_string(time.bound)},
               {"seconds", time.seconds}};
    if (op.kind != model::OpKind::memory) entry["efficiency"] = time.efficiency;
    ops.push_back(entry);
  }
  const cost::PassTimes total = cost::estimate_layer(list, type, config, memory_efficiency);
  return {{"gpu_type", type.name},
          {"layer", layer.name()},
          {"kind", model::to_string(layer.kind())},
          {"index", index},
          {"tp", work.tp},
          {"forward_s", total.forward},
          {"backward_input_s", total.backward_input},
          {"backward_weight_s", total.backward_weight},
          {"ops", ops}};
}

}  // namespace

json estimate_report(const cost::CostModel& costs, const DescribeSettings& describe,
                     const EstimateSettings& settings) {
  const auto& model = costs.model();
  const auto& cluster = costs.cluster();
  // The cluster's own types; --gpu may name any type it knows (the catalogue's too).
  std::vector<const cluster::GpuType*> types;
  if (settings.gpu_type) {
    for (const auto& type : cluster.gpu_types()) {
      if (cluster::same_gpu_name(type.name, *settings.gpu_type)) types.push_back(&type);
    }
    if (types.empty()) {
      std::vector<std::string> names;
      for (const auto& type : cluster.gpu_types()) names.push_back(type.name);
      throw InputError("--gpu", *settings.gpu_type,
                       "expected a GPU type of the catalogue or the cluster file (see `hyperpipe "
                       "devices`)" +
                           did_you_mean(*settings.gpu_type, names));
    }
  } else {
    for (const auto& name : cluster.used_gpu_types()) types.push_back(&cluster.gpu_type(name));
  }
  const int64_t seq = model.config().sequence_length(describe.seq_len);
  json layers = json::array();
  for (const auto* type : types) {
    const model::Workload work{describe.micro_batch, seq,
                               tp_within_a_node(cluster, type->name, describe.tp),
                               costs.options().sequence_parallel};
    for (const int index : chosen_layers(model, settings.layer)) {
      layers.push_back(layer_estimate(costs, *type, index, work));
    }
  }
  return layers;
}

void print_estimate_tables(const json& estimates, std::ostream& out) {
  for (const auto& layer : estimates) {
    out << fmt::format("\nOp-level estimate: {} on {} at tp {} (forward {}, B {}, W {})\n",
                       layer["layer"].get<std::string>(), layer["gpu_type"].get<std::string>(),
                       layer["tp"].get<int>(), format_duration(layer["forward_s"].get<double>()),
                       format_duration(layer["backward_input_s"].get<double>()),
                       format_duration(layer["backward_weight_s"].get<double>()));
    Table table(
        {"Op", "Pass", "Shape (b × m×n×k)", ">FLOPs", ">Bytes", "Bound", ">Share", ">Time"});
    for (const auto& op : layer["ops"]) {
      const std::string pass = op["pass"] == "forward"          ? "F"
                               : op["pass"] == "backward_input" ? "B"
                                                                : "W";
      table.add_row({op["name"].get<std::string>(), pass, op["shape"].get<std::string>(),
                     op["flops"].get<double>() > 0 ? format_flops(op["flops"].get<double>()) : "",
                     format_bytes(op["bytes"].get<double>()), op["bound"].get<std::string>(),
                     op.contains("efficiency")
                         ? fmt::format("{:.0f}%", 100 * op["efficiency"].get<double>())
                         : "",
                     format_duration(op["seconds"].get<double>())});
    }
    table.print(out, "  ");
  }
  out << "  Share: of the format's peak, before tile and wave quantization. These are the times "
         "a layer without a profile gets in `describe`, `plan` and `simulate` (docs/design.md).\n";
}

}  // namespace hyperpipe::report
