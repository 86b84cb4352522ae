#include "hyperpipe/sim/plan_simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::sim {
namespace {

// The slowest of the links between rank i of one group and rank i mod n of the other.
cluster::Link slowest_pair_link(const cluster::Cluster& cluster, const cost::DeviceGroup& from,
                                const cost::DeviceGroup& to) {
  cluster::Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  const size_t pairs = std::max(from.devices.size(), to.devices.size());
  for (size_t i = 0; i < pairs; ++i) {
    const auto link = cluster.link_between(from.devices[i % from.devices.size()],
                                           to.devices[i % to.devices.size()]);
    slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
    slowest.latency = std::max(slowest.latency, link.latency);
  }
  return slowest;
}

}  // namespace

std::string track_name(const PlanSimulation& simulation, int rank) {
  const int ranks = simulation.schedule.ranks;
  std::string stages;
  for (int c = 0; c < simulation.schedule.chunks; ++c) {
    stages += (c == 0 ? "" : ",") + std::to_string(c * ranks + rank);
  }
  const StageReport& stage = simulation.stages[rank];
  return fmt::format("stage {}: {} ×{} [{}]", stages, stage.gpu_type, stage.devices.size(),
                     plan::format_devices(stage.devices));
}

PlanSimulation simulate_plan(const cost::CostModel& costs, const plan::Plan& plan,
                             const SimOptions& options) {
  const auto& cluster = costs.cluster();
  const int64_t seq = plan.seq_len > 0 ? plan.seq_len : costs.model().config().seq_len;
  const int stage_count = static_cast<int>(plan.stages.size());
  PlanSimulation result;
  result.schedule = schedule::insert_communication(schedule::make_schedule(
      plan.schedule, plan.ranks(), plan.micro_batches, plan.chunks, plan.warmup));

  SimInput input;
  input.overlap_allreduce = options.overlap_allreduce;
  std::vector<cost::DeviceGroup> groups;
  for (int s = 0; s < stage_count; ++s) {
    const plan::StagePlan& stage = plan.stages[s];
    groups.push_back(cost::make_device_group(cluster, stage.devices, stage.dp, stage.tp));
    const cost::DeviceGroup& group = groups.back();
    StageReport report;
    report.stage = s;
    report.rank = s % plan.ranks();
    report.gpu_type = group.gpu_type;
    report.dp = stage.dp;
    report.tp = stage.tp;
    report.first_layer = stage.first_layer;
    report.end_layer = stage.end_layer;
    report.devices = stage.devices;
    report.compute = costs.range_time(stage.first_layer, stage.end_layer, group,
                                      plan.micro_batch_size, seq, stage.recompute);
    report.memory = costs.stage_memory(stage.first_layer, stage.end_layer, group,
                                       plan.micro_batch_size, seq, 1, stage.recompute);
    StageCost cost;
    cost.forward = report.compute.forward;
    cost.backward_input = report.compute.backward_input + report.compute.recompute;
    cost.backward_weight = report.compute.backward_weight;
    cost.activation_bytes = report.memory.activations;
    cost.weight_gradient_bytes = report.memory.weight_gradient_activations;
    cost.static_bytes = report.memory.weights + report.memory.gradients + report.memory.optimizer;
    cost.allreduce = costs.gradient_allreduce_time(stage.first_layer, stage.end_layer, group);
    cost.optimizer = costs.optimizer_time(stage.first_layer, stage.end_layer, group);
    input.stages.push_back(cost);
    result.stages.push_back(report);
  }
  for (int r = 0; r < plan.ranks(); ++r) {
    input.reserved_bytes.push_back(result.stages[r].memory.reserved);
    result.memory_capacity.push_back(groups[r].memory_bytes);
    result.devices += static_cast<int>(plan.stages[r].devices.size());
  }

  // Transfers between nodes share the link between those nodes, one per direction.
  std::map<std::pair<int, int>, int> link_ids;
  const auto link_id = [&](const cost::DeviceGroup& from, const cost::DeviceGroup& to) {
    const int a = cluster.devices()[from.devices.front()].node;
    const int b = cluster.devices()[to.devices.front()].node;
    if (a == b) return -1;
    return link_ids.emplace(std::pair{a, b}, static_cast<int>(link_ids.size())).first->second;
  };
  for (int s = 0; s + 1 < stage_count; ++s) {
    const auto& from = groups[s];
    const auto& to = groups[s + 1];
    const cluster::Link link = slowest_pair_link(cluster, from, to);
    const int last_layer = plan.stages[s].end_layer - 1;
    const auto forward = costs.cut_transfer(last_layer, plan.micro_batch_size, seq, from, to, link);
    const auto backward =
        costs.cut_transfer(last_layer, plan.micro_batch_size, seq, to, from, link);
    const double rate = link.bandwidth * costs.options().link_efficiency;
    input.activations.push_back(
        {forward.bytes / rate, forward.seconds - forward.bytes / rate, link_id(from, to)});
    result.activation_transfer.push_back(forward.seconds);
    input.gradients.push_back(
        {backward.bytes / rate, backward.seconds - backward.bytes / rate, link_id(to, from)});
  }

  input.schedule = result.schedule;
  result.output = simulate(input);
  for (int r = 0; r < plan.ranks(); ++r)
    result.output.timeline.tracks[r].name = track_name(result, r);
  for (int r = 0; r < plan.ranks(); ++r)
    result.output.timeline.tracks[r].devices = plan.stages[r].devices;

  const double time = result.output.iteration_time;
  const double tokens = static_cast<double>(plan.global_batch()) * static_cast<double>(seq);
  result.tokens_per_s = tokens / time;
  result.model_flops =
      costs.model().iteration_flops(plan.global_batch(), seq, model::Recompute::none);
  result.achieved_flops_per_gpu = result.model_flops / time / result.devices;
  double peak = 0;
  for (int r = 0; r < plan.ranks(); ++r) {
    const auto& type = cluster.gpu_type(result.stages[r].gpu_type);
    peak += type.peak_flops(costs.model().config().dtype, costs.options().allow_tf32) *
            static_cast<double>(plan.stages[r].devices.size());
  }
  result.mfu = result.model_flops / time / peak;
  return result;
}

}  // namespace hyperpipe::sim
