#include "hyperpipe/report/describe_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/report/memory_breakdown.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {
namespace {

using model::Recompute;
using nlohmann::json;

json layer_json(const model::Layer& layer, const model::Workload& work) {
  const model::LayerFlops flops = layer.flops(work);
  return {{"index", layer.index()},
          {"name", layer.name()},
          {"kind", to_string(layer.kind())},
          {"params", layer.params()},
          {"forward_flops", flops.forward},
          {"backward_input_flops", flops.backward_input},
          {"backward_weight_flops", flops.backward_weight},
          {"activation_bytes",
           {{"none", layer.activation_bytes(work, Recompute::none)},
            {"selective", layer.activation_bytes(work, Recompute::selective)},
            {"full", layer.activation_bytes(work, Recompute::full)}}},
          {"output_bytes", layer.output_bytes(work)}};
}

json model_json(const model::Model& model, const model::Workload& work) {
  const auto& c = model.config();
  json layers = json::array();
  for (const auto& layer : model.layers()) layers.push_back(layer_json(layer, work));
  return {{"name", c.name},
          {"flavour", to_string(c.flavour)},
          {"dtype", to_string(c.dtype)},
          {"tf32", c.tf32},
          {"hidden", c.hidden},
          {"blocks", c.layers},
          {"heads", c.heads},
          {"kv_heads", c.kv_heads},
          {"ffn_hidden", c.ffn_hidden},
          {"vocab", c.vocab},
          {"seq_len", c.seq_len},
          {"tied_embeddings", c.tied_embeddings},
          {"total_params", model.total_params()},
          {"layer_numbering", plan::kLayerNumbering},
          {"layers", layers}};
}

json link_json(const cluster::Link& link) {
  return {{"bandwidth_bytes_per_s", link.bandwidth}, {"latency_s", link.latency}};
}

json cluster_json(const cluster::Cluster& cluster) {
  json nodes = json::array();
  for (int n = 0; n < static_cast<int>(cluster.nodes().size()); ++n) {
    const auto& node = cluster.nodes()[n];
    std::vector<int> devices;  // the ids plans use for this node's GPUs
    for (const auto& device : cluster.devices()) {
      if (device.node == n) devices.push_back(device.id);
    }
    nodes.push_back({{"name", node.name},
                     {"gpu_type", node.gpu_type},
                     {"count", node.gpu_count},
                     {"devices", devices},
                     {"memory_bytes", node.memory_bytes},
                     {"island", cluster.islands()[node.island].name}});
  }
  json islands = json::array();
  for (const auto& island : cluster.islands()) {
    json members = json::array();
    for (int n : island.nodes) members.push_back(cluster.nodes()[n].name);
    islands.push_back({{"name", island.name}, {"nodes", members}});
  }
  json overrides = json::array();
  for (const auto& entry : cluster.overrides()) {
    json item = link_json(entry.link);
    item["between"] = {entry.first, entry.second};
    overrides.push_back(item);
  }
  json links = json::object();
  for (auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                     cluster::LinkLevel::inter_island}) {
    links[std::string(to_string(level))] = link_json(cluster.level_link(level));
  }
  return {{"name", cluster.name()}, {"devices", cluster.devices().size()},
          {"nodes", nodes},         {"islands", islands},
          {"links", links},         {"overrides", overrides}};
}

json compute_json(const cost::ComputeTime& time) {
  return {{"forward_s", time.forward},
          {"backward_input_s", time.backward_input},
          {"backward_weight_s", time.backward_weight},
          {"recompute_s", time.recompute},
          {"tp_communication_s", time.tp_communication},
          {"source", time.source()}};
}

// How many decoder blocks one device of this type holds with one micro-batch in flight,
// within its usable memory after what it holds besides the blocks (context, communicators,
// workspaces, the allocator's share): a first feel for how many stages the model needs.
int64_t blocks_that_fit(const cost::CostModel& costs, const cost::DeviceGroup& group,
                        const DescribeSettings& settings, int64_t seq_len) {
  const int block = 1;
  const cost::StageMemory one = costs.stage_memory(block, block + 1, group, settings.micro_batch,
                                                   seq_len, 1, settings.recompute);
  const double per_block = one.allocator_ratio * (one.static_allocated() - one.workspaces +
                                                  one.activations + one.pipe_buffers);
  const double free = costs.usable_memory(group.memory_bytes) - one.outside_allocator() -
                      one.allocator_ratio * one.workspaces;
  if (per_block <= 0 || free <= 0) return 0;
  return static_cast<int64_t>(std::floor(free / per_block));
}

}  // namespace

int tp_within_a_node(const cluster::Cluster& cluster, const std::string& type_name, int tp) {
  int largest_node = 0;
  for (const auto& node : cluster.nodes()) {
    if (cluster::same_gpu_name(node.gpu_type, type_name)) {
      largest_node = std::max(largest_node, node.gpu_count);
    }
  }
  return largest_node > 0 ? std::min(tp, largest_node) : tp;
}

namespace {

json gpu_cost_json(const cost::CostModel& costs, const std::string& type_name,
                   const DescribeSettings& settings, int64_t seq_len) {
  const auto& cluster = costs.cluster();
  const auto& type = cluster.gpu_type(type_name);
  const int available = cluster.count_devices_of_type(type_name);
  const int tp = tp_within_a_node(cluster, type_name, settings.tp);
  const cost::DeviceGroup group = cost::first_devices_of_type(cluster, type_name, 1, tp);
  const int layer_count = costs.model().num_layers();
  json layers = json::array();
  for (int layer = 0; layer < layer_count; ++layer) {
    json item = compute_json(costs.range_time(layer, layer + 1, group, settings.micro_batch,
                                              seq_len, settings.recompute));
    item["index"] = layer;
    layers.push_back(item);
  }
  const cost::ComputeTime whole =
      costs.range_time(0, layer_count, group, settings.micro_batch, seq_len, settings.recompute);
  const cost::StageMemory memory = costs.stage_memory(0, layer_count, group, settings.micro_batch,
                                                      seq_len, 1, settings.recompute);
  const double model_flops =
      costs.model().iteration_flops(settings.micro_batch, seq_len, settings.recompute) / tp;
  return {
      {"gpu_type", type.name},
      {"count", available},
      {"tp", tp},
      {"memory_bytes", group.memory_bytes},
      {"peak_flops", type.peak_flops(costs.model().config().dtype, costs.model().config().tf32)},
      {"layers", layers},
      {"whole_model", compute_json(whole)},
      {"whole_model_achieved_flops", model_flops / whole.total()},
      {"whole_model_memory", memory_json(memory)},
      {"blocks_that_fit", blocks_that_fit(costs, group, settings, seq_len)}};
}

// What each GPU type holds outside the model, and where the figures come from.
json overheads_json(const cost::CostModel& costs) {
  json result = json::array();
  for (const auto& name : costs.cluster().used_gpu_types()) {
    const auto& type = costs.cluster().gpu_type(name);
    const auto o = costs.device_overheads(type);
    json item{{"gpu_type", type.name},
              {"context_bytes", o.context},
              {"collective_communicator_bytes", o.collective_communicator},
              {"p2p_peer_bytes", o.p2p_peer},
              {"workspace_bytes", o.workspace},
              {"allocator_ratio", o.allocator_ratio},
              {"source", o.source}};
    if (type.reserved_memory) item["reserved_memory_bytes"] = *type.reserved_memory;
    result.push_back(item);
  }
  return result;
}

json transfer_json(const cost::CostModel& costs, const model::Workload& work) {
  const auto& cluster = costs.cluster();
  // The activation a decoder block hands to the next stage (each shard's part at tp > 1).
  const double bytes = static_cast<double>(costs.model().layers().at(1).output_bytes(work));
  json result = json::array();
  for (auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                     cluster::LinkLevel::inter_island}) {
    result.push_back({{"link", std::string(to_string(level))},
                      {"bytes", bytes},
                      {"seconds", costs.transfer(bytes, cluster.level_link(level)).seconds}});
  }
  for (const auto& entry : cluster.overrides()) {
    result.push_back({{"link", entry.first + " <-> " + entry.second},
                      {"bytes", bytes},
                      {"seconds", costs.transfer(bytes, entry.link).seconds}});
  }
  return result;
}

// Which link levels the cluster really has, so the tables leave out filled-in ones.
std::vector<std::string> levels_in_use(const cluster::Cluster& cluster) {
  std::vector<std::string> levels;
  bool used[3] = {false, false, cluster.islands().size() > 1};
  for (const auto& node : cluster.nodes()) used[0] = used[0] || node.gpu_count > 1;
  for (const auto& island : cluster.islands()) used[1] = used[1] || island.nodes.size() > 1;
  const char* names[3] = {"intra_node", "intra_island", "inter_island"};
  for (int i = 0; i < 3; ++i) {
    if (used[i]) levels.push_back(names[i]);
  }
  return levels;
}

std::string seconds_text(const json& value) {
  return format_duration(value.get<double>());
}

}  // namespace

json describe_report(const cost::CostModel& costs, const DescribeSettings& settings) {
  const auto& model = costs.model();
  const int64_t seq_len = model.config().sequence_length(settings.seq_len);
  const model::Workload work{settings.micro_batch, seq_len, 1, costs.options().sequence_parallel};
  json types = json::array();
  for (const auto& name : costs.cluster().used_gpu_types()) {
    types.push_back(gpu_cost_json(costs, name, settings, seq_len));
  }
  return {{"format", kDescribeFormat},
          {"workload",
           {{"micro_batch", settings.micro_batch},
            {"seq_len", seq_len},
            {"tp", settings.tp},
            {"recompute", to_string(settings.recompute)}}},
          {"model", model_json(model, work)},
          {"total_params", model.total_params()},
          {"iteration_flops_per_micro_batch",
           model.iteration_flops(settings.micro_batch, seq_len, settings.recompute)},
          {"cluster", cluster_json(costs.cluster())},
          {"links_in_use", levels_in_use(costs.cluster())},
          {"cost", types},
          // Per shard at --tp: to a next stage of the same tp each shard sends its part
          // (cost::shard_share_of_cut), as the simulator and the runtime do.
          {"activation_transfer", transfer_json(costs, {settings.micro_batch, seq_len, settings.tp,
                                                        costs.options().sequence_parallel})},
          {"cost_options",
           {{"estimator", cost::to_string(costs.options().estimator)},
            {"matmul_efficiency", costs.options().matmul_efficiency},
            {"memory_efficiency", costs.options().memory_efficiency},
            {"link_efficiency", costs.link_efficiency()},
            {"memory_margin", costs.options().memory_margin},
            {"device_overheads", overheads_json(costs)}}}};
}

void print_describe_tables(const json& report, std::ostream& out) {
  const json& m = report["model"];
  const json& w = report["workload"];
  out << fmt::format(
      "Model {} ({}, {}): {} parameters, {} blocks, hidden {}, {} heads ({} kv), ffn {}, "
      "vocab {}\n",
      m["name"].get<std::string>(), m["flavour"].get<std::string>(), m["dtype"].get<std::string>(),
      format_count(m["total_params"].get<double>()), m["blocks"].get<int64_t>(),
      m["hidden"].get<int64_t>(), m["heads"].get<int64_t>(), m["kv_heads"].get<int64_t>(),
      m["ffn_hidden"].get<int64_t>(), m["vocab"].get<int64_t>());
  out << fmt::format("Per micro-batch of {} x {} tokens: {} per training step (recompute {})\n\n",
                     w["micro_batch"].get<int64_t>(), w["seq_len"].get<int64_t>(),
                     format_flops(report["iteration_flops_per_micro_batch"].get<double>()),
                     w["recompute"].get<std::string>());

  // Decoder blocks are identical: one row stands for all of them.
  Table layers({"Layer", "Chain", ">Count", ">Params", ">Fwd", ">Bwd-input", ">Bwd-weight",
                ">Act none", ">Act selective", ">Act full", ">Output"});
  const json& all = m["layers"];
  const int blocks = static_cast<int>(m["blocks"].get<int64_t>());
  for (size_t i = 0; i < all.size(); ++i) {
    const json& layer = all[i];
    const bool block = layer["kind"] == "decoder_block";
    if (block && i > 1) continue;
    const json& act = layer["activation_bytes"];
    const int index = layer["index"].get<int>();
    layers.add_row({block ? "block" : layer["name"].get<std::string>(),
                    plan::format_layers(index, index + (block ? blocks : 1)),
                    block ? std::to_string(m["blocks"].get<int64_t>()) : "1",
                    format_count(layer["params"].get<double>()),
                    format_flops(layer["forward_flops"].get<double>()),
                    format_flops(layer["backward_input_flops"].get<double>()),
                    format_flops(layer["backward_weight_flops"].get<double>()),
                    format_bytes(act["none"].get<double>()),
                    format_bytes(act["selective"].get<double>()),
                    format_bytes(act["full"].get<double>()),
                    format_bytes(layer["output_bytes"].get<double>())});
  }
  layers.print(out, "  ");
  out << "  " << plan::layer_numbering_note(static_cast<int>(all.size())) << '\n';

  const json& c = report["cluster"];
  out << fmt::format("\nCluster {}: {} in {}, {}\n", c["name"].get<std::string>(),
                     counted(c["devices"].get<int>(), "GPU"),
                     counted(static_cast<int64_t>(c["nodes"].size()), "node"),
                     counted(static_cast<int64_t>(c["islands"].size()), "island"));
  Table nodes({"Node", "GPU", ">Count", "Device ids", ">Memory", "Island"});
  for (const auto& node : c["nodes"]) {
    nodes.add_row({node["name"], node["gpu_type"], std::to_string(node["count"].get<int>()),
                   plan::format_devices(node["devices"].get<std::vector<int>>()),
                   format_bytes(node["memory_bytes"].get<double>()), node["island"]});
  }
  nodes.print(out, "  ");
  out << '\n';
  Table links({"Link", ">Bandwidth", ">Latency", ">Block output"});
  std::vector<std::string> in_use = report["links_in_use"];
  for (const auto& transfer : report["activation_transfer"]) {
    const std::string name = transfer["link"];
    const bool level = c["links"].contains(name);
    if (level && std::find(in_use.begin(), in_use.end(), name) == in_use.end()) continue;
    json link = level ? c["links"][name] : json();
    if (!level) {
      for (const auto& entry : c["overrides"]) {
        if (entry["between"][0].get<std::string>() + " <-> " +
                entry["between"][1].get<std::string>() ==
            name) {
          link = entry;
        }
      }
    }
    links.add_row({name, format_bandwidth(link["bandwidth_bytes_per_s"].get<double>()),
                   format_duration(link["latency_s"].get<double>()),
                   seconds_text(transfer["seconds"])});
  }
  links.print(out, "  ");

  out << fmt::format("\nCost model per GPU type (micro-batch {}, seq {}, tp {}):\n",
                     w["micro_batch"].get<int64_t>(), w["seq_len"].get<int64_t>(),
                     w["tp"].get<int>());
  Table costs({"GPU", ">Count", "Layer", ">Fwd", ">Bwd-input", ">Bwd-weight", "Source"});
  Table summary({"GPU", ">Whole model fwd+bwd", ">Achieved", ">Weights+grads+Adam", ">Memory",
                 ">Blocks that fit"});
  std::vector<std::pair<std::string, json>> memory_rows;
  for (const auto& type : report["cost"]) {
    const std::string name = type["gpu_type"];
    bool first_row = true;
    for (const auto& layer : type["layers"]) {
      const json& info = all[layer["index"].get<size_t>()];
      const bool block = info["kind"] == "decoder_block";
      if (block && info["index"].get<int>() > 1) continue;
      costs.add_row({first_row ? name : "",
                     first_row ? std::to_string(type["count"].get<int>()) : "",
                     block ? "block (each)" : info["name"].get<std::string>(),
                     seconds_text(layer["forward_s"]), seconds_text(layer["backward_input_s"]),
                     seconds_text(layer["backward_weight_s"]), layer["source"]});
      first_row = false;
    }
    const json& whole = type["whole_model"];
    const json& memory = type["whole_model_memory"];
    double static_bytes = 0;
    for (const auto& term : memory["terms"]) {
      const std::string term_name = term["name"];
      if (term_name == "weights" || term_name == "gradients" || term_name == "optimizer") {
        static_bytes += term["bytes"].get<double>();
      }
    }
    memory_rows.emplace_back(name, memory);
    summary.add_row({name,
                     format_duration(whole["forward_s"].get<double>() +
                                     whole["backward_input_s"].get<double>() +
                                     whole["backward_weight_s"].get<double>() +
                                     whole["recompute_s"].get<double>()),
                     format_flop_rate(type["whole_model_achieved_flops"].get<double>()),
                     format_bytes(static_bytes), format_bytes(type["memory_bytes"].get<double>()),
                     std::to_string(type["blocks_that_fit"].get<int64_t>())});
  }
  costs.print(out, "  ");
  out << '\n';
  summary.print(out, "  ");
  out << "\n  The whole model on one device (one micro-batch in flight), by term:\n";
  print_memory_table(memory_rows, out, "  ");
  const json& options = report["cost_options"];
  const std::string products =
      options.value("estimator", "ops") == "ops"
          ? "price each kernel by what bounds it: products at their GPU generation's share of "
            "peak for their shape (`describe --estimate` shows each op)"
          : fmt::format("assume {:.0f}% of peak matmul FLOP/s",
                        100 * options["matmul_efficiency"].get<double>());
  out << fmt::format(
      "\nEstimates {}, {:.0f}% of memory bandwidth, {:.0f}% of link bandwidth "
      "(src/hyperpipe/cost/cost_options.h); plans leave {:.0f}% of each device's memory "
      "unused. What a device holds besides the model (src/hyperpipe/cost/device_memory.cc):\n",
      products, 100 * options["memory_efficiency"].get<double>(),
      100 * options["link_efficiency"].get<double>(), 100 * options["memory_margin"].get<double>());
  for (const auto& o : options["device_overheads"]) {
    if (o.contains("reserved_memory_bytes")) {
      out << fmt::format("  {}: {} reserved (the cluster file's reserved_memory)\n",
                         o["gpu_type"].get<std::string>(),
                         format_bytes(o["reserved_memory_bytes"].get<double>()));
      continue;
    }
    out << fmt::format(
        "  {}: context {}, {} per collective communicator, {} per pipeline neighbour, "
        "workspaces {}, allocator reserves {:.2f}× what it hands out ({})\n",
        o["gpu_type"].get<std::string>(), format_bytes(o["context_bytes"].get<double>()),
        format_bytes(o["collective_communicator_bytes"].get<double>()),
        format_bytes(o["p2p_peer_bytes"].get<double>()),
        format_bytes(o["workspace_bytes"].get<double>()), o["allocator_ratio"].get<double>(),
        o["source"].get<std::string>());
  }
}

}  // namespace hyperpipe::report
