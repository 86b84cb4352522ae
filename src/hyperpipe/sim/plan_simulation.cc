#include "hyperpipe/sim/plan_simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "hyperpipe/plan/framework.h"
#include "hyperpipe/plan/plan_schedule.h"
#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/sim/costs_as_planned.h"

namespace hyperpipe::sim {

cluster::Link slowest_pair_link(const cluster::Cluster& cluster, const cost::DeviceGroup& from,
                                const cost::DeviceGroup& to) {
  cluster::Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  const size_t pairs = std::max(from.devices.size(), to.devices.size());
  // A link is a function of the two nodes (for distinct devices): pairs on the nodes of the
  // pair before add nothing.
  int last_a = -1;
  int last_b = -1;
  for (size_t i = 0; i < pairs; ++i) {
    const int a = from.devices[i % from.devices.size()];
    const int b = to.devices[i % to.devices.size()];
    const int node_a = cluster.devices()[a].node;
    const int node_b = cluster.devices()[b].node;
    if (a != b && node_a == last_a && node_b == last_b) continue;
    slowest = cluster::slower_link(slowest, cluster.link_between(a, b));
    if (a != b) {
      last_a = node_a;
      last_b = node_b;
    }
  }
  return slowest;
}

namespace {

// A runtime's own host time per action (plan::FrameworkTraits::host_seconds_per_action),
// where the host is the device: added to the forward, to the backward whole and to each
// part of a split one. split_extra grows by as much, as the whole backward, computed as
// backward_input + backward_weight − split_extra, is one action, not two.
void add_host_time(double host_seconds, StageCost& cost) {
  cost.forward += host_seconds;
  cost.backward_input += host_seconds;
  cost.backward_weight += host_seconds;
  cost.split_extra += host_seconds;
}

// The stage of `pipeline` that holds `layer`.
const plan::StagePlan& holder_of(const plan::Pipeline& pipeline, int layer) {
  for (const auto& stage : pipeline.stages) {
    if (stage.first_layer <= layer && layer < stage.end_layer) return stage;
  }
  throw std::invalid_argument(fmt::format("no stage holds layer {}", layer));
}

// Summing the gradients of a stage's layers across the plan's pipelines: one ring
// all-reduce over the pipelines per run of layers that the same stages hold in every
// pipeline. Each pipeline's stage has already reduced inside its dp group, so its dp
// devices can carry a slice each, in parallel lanes (as many as the pipeline with the
// fewest) while all holders share one node; between nodes the lanes share that node
// pair's link, as transfers do in the simulator, and count as one.
double replica_sync_time(const cost::CostModel& costs, const plan::Plan& plan,
                         const plan::StagePlan& stage) {
  const int pipelines = plan.pipeline_count();
  if (pipelines < 2) return 0.0;
  const auto& cluster = costs.cluster();
  // The runtime sums the gradients as it holds them (fp32 main grads in mixed precision).
  const double element_bytes = costs.gradient_bytes_per_element();
  double total = 0;
  for (int first = stage.first_layer; first < stage.end_layer;) {
    int end = stage.end_layer;
    int lanes = stage.dp;
    int tp = stage.tp;
    bool across_nodes = false;
    cluster::Link slowest{std::numeric_limits<double>::infinity(), 0.0};
    for (int p = 0; p < pipelines; ++p) {
      const plan::StagePlan& holder = holder_of(plan.pipeline(p), first);
      end = std::min(end, holder.end_layer);
      lanes = std::min(lanes, holder.dp);
      tp = std::min(tp, holder.tp);
      if (holder.devices == stage.devices) continue;
      if (cluster.devices()[holder.devices.front()].node !=
          cluster.devices()[stage.devices.front()].node) {
        across_nodes = true;
      }
      slowest = cluster::slower_link(
          slowest, cluster.link_between(stage.devices.front(), holder.devices.front()));
    }
    if (across_nodes) lanes = 1;
    const double bytes = costs.range_params(first, end, tp) * element_bytes / lanes;
    total += costs.allreduce_time(bytes, pipelines, slowest);
    first = end;
  }
  return total;
}

// The tied embedding's gradient summed between the first stage's group (the embedding)
// and the last stage's (the head): every rank of both adds its copy, as the runtime does —
// slice by slice when both split the vocabulary over the same tp, else the whole matrix.
double tied_embedding_time(const cost::CostModel& costs, const cost::DeviceGroup& first,
                           const cost::DeviceGroup& last, const cluster::Link& between) {
  const auto& config = costs.model().config();
  if (!config.tied_embeddings || first.devices == last.devices) return 0.0;
  const double element_bytes = costs.gradient_bytes_per_element();
  const double matrix = static_cast<double>(config.vocab) * static_cast<double>(config.hidden);
  if (first.tp == last.tp) {
    return costs.allreduce_time(matrix / first.tp * element_bytes, first.dp + last.dp, between);
  }
  return costs.allreduce_time(matrix * element_bytes,
                              static_cast<int>(first.devices.size() + last.devices.size()),
                              between);
}

// The global norm: one number per rank (and the loss beside it) summed over every process
// of the plan, across its slowest link from the first device.
double global_norm_time(const cost::CostModel& costs, const plan::Plan& plan) {
  constexpr double kNormAndLossBytes = 2 * sizeof(double);
  const auto& cluster = costs.cluster();
  const int first_device = plan.stages.front().devices.front();
  cluster::Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  int processes = 0;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {  // chunks of a group are on its devices
      for (int device : pipeline.stages[r].devices) {
        ++processes;
        if (device == first_device) continue;
        slowest = cluster::slower_link(slowest, cluster.link_between(first_device, device));
      }
    }
  }
  if (processes < 2) return 0.0;
  return costs.allreduce_time(kNormAndLossBytes, processes, slowest);
}

// The simulator's input for pipeline p but its schedule, with a report per stage appended
// to `result`.
SimInput pipeline_input(const cost::CostModel& costs, const plan::Plan& plan, int p,
                        const SimOptions& options, PlanSimulation& result) {
  const auto& cluster = costs.cluster();
  const plan::Pipeline& pipeline = plan.pipeline(p);
  const int64_t seq = costs.model().config().sequence_length(plan.seq_len);
  const int stage_count = static_cast<int>(pipeline.stages.size());
  const size_t first_report = result.stages.size();
  SimInput input;
  std::vector<cost::DeviceGroup> groups;
  for (int s = 0; s < stage_count; ++s) {
    const plan::StagePlan& stage = pipeline.stages[s];
    groups.push_back(cost::make_device_group(cluster, stage.devices, stage.dp, stage.tp));
    const cost::DeviceGroup& group = groups.back();
    StageReport report;
    report.pipeline = p;
    report.stage = s;
    report.rank = s % pipeline.ranks();
    report.gpu_type = group.gpu_type;
    report.dp = stage.dp;
    report.tp = stage.tp;
    report.first_layer = stage.first_layer;
    report.end_layer = stage.end_layer;
    report.devices = stage.devices;
    report.compute = costs.range_time(stage.first_layer, stage.end_layer, group,
                                      pipeline.micro_batch_size, seq, stage.recompute);
    report.memory = costs.stage_memory(stage.first_layer, stage.end_layer, group,
                                       pipeline.micro_batch_size, seq, 1, stage.recompute);
    report.replica_sync = replica_sync_time(costs, plan, stage);
    StageCost cost;
    cost.forward = report.compute.forward;
    cost.backward_input = report.compute.backward_input + report.compute.recompute;
    cost.backward_weight = report.compute.backward_weight;
    cost.split_extra = report.compute.split_extra;
    cost.activation_bytes = report.memory.activations + report.memory.pipe_buffers;
    cost.weight_gradient_bytes = report.memory.weight_gradient_activations;
    cost.static_bytes = report.memory.weights + report.memory.gradients + report.memory.optimizer;
    cost.allreduce = costs.gradient_allreduce_time(stage.first_layer, stage.end_layer, group);
    cost.optimizer = costs.optimizer_time(stage.first_layer, stage.end_layer, group);
    cost.replica_sync = report.replica_sync;
    if (options.measured) {
      const auto measured = options.measured->find({p, s});
      if (measured != options.measured->end()) apply_measured(measured->second, cost);
    }
    const double host_seconds =
        plan::host_seconds_per_action(plan::traits(plan.runtime), plan.schedule);
    if (host_seconds > 0 && cluster.gpu_type(group.gpu_type).speed.has_value()) {
      add_host_time(host_seconds, cost);
    }
    input.stages.push_back(cost);
    result.stages.push_back(report);
  }
  for (int r = 0; r < pipeline.ranks(); ++r) {
    // Per device, not per chunk: its first chunk's.
    const cost::StageMemory& device = result.stages[first_report + r].memory;
    input.reserved_bytes.push_back(device.outside_allocator());
    input.allocator_ratio.push_back(device.allocator_ratio);
    double buffers = device.workspaces;
    for (size_t c = first_report + r; c < result.stages.size(); c += pipeline.ranks()) {
      const cost::StageMemory& chunk = result.stages[c].memory;
      buffers += chunk.framework + chunk.logits;
    }
    input.buffer_bytes.push_back(buffers);
    result.memory_capacity.push_back(groups[r].memory_bytes);
    result.memory_limit.push_back(costs.usable_memory(groups[r].memory_bytes));
    result.devices += static_cast<int>(pipeline.stages[r].devices.size());
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
    const int last_layer = pipeline.stages[s].end_layer - 1;
    const int64_t micro_batch = pipeline.micro_batch_size;
    const auto forward = costs.cut_transfer(last_layer, micro_batch, seq, from, to, link);
    const auto backward = costs.cut_transfer(last_layer, micro_batch, seq, to, from, link);
    // A transfer holds its link for its time less the link's latency.
    const auto occupancy = [&](const cost::Transfer& t) {
      return std::max(0.0, costs.transfer(t.bytes, link).seconds - link.latency);
    };
    const double forward_held = occupancy(forward);
    const double backward_held = occupancy(backward);
    input.activations.push_back({forward_held, forward.seconds - forward_held, link_id(from, to)});
    result.stages[first_report + s].activation_transfer = forward.seconds;
    input.gradients.push_back({backward_held, backward.seconds - backward_held, link_id(to, from)});
  }
  input.tied_embedding =
      tied_embedding_time(costs, groups.front(), groups.back(),
                          slowest_pair_link(cluster, groups.front(), groups.back()));
  input.global_norm = global_norm_time(costs, plan);
  input.p2p = options.p2p.value_or(plan::blocks_on_p2p(plan) ? P2pMode::blocking : P2pMode::async);
  input.record_timeline = options.timeline;
  return input;
}

// Per rank, its device's peak by term: the static terms of every chunk it holds, its first
// chunk's device-level terms, the activations at the simulated peak.
std::vector<cost::StageMemory> device_peaks(const PlanSimulation& simulation) {
  std::vector<cost::StageMemory> peaks;
  for (int p = 0; p < simulation.pipelines(); ++p) {
    const auto stages = simulation.pipeline_stages(p);
    const int ranks = simulation.schedules[p].ranks;
    for (int r = 0; r < ranks; ++r) {
      cost::StageMemory peak = stages[r]->memory;
      for (size_t c = r + ranks; c < stages.size(); c += ranks) {
        const cost::StageMemory& chunk = stages[c]->memory;
        peak.weights += chunk.weights;
        peak.gradients += chunk.gradients;
        peak.optimizer += chunk.optimizer;
        peak.framework += chunk.framework;
        peak.logits += chunk.logits;
      }
      const int rank = simulation.first_rank[p] + r;
      const double in_flight = simulation.output.ranks[rank].peak_activation_bytes;
      // The simulator counts activations and kept outputs together; split them as one
      // micro-batch's are.
      const double per_micro_batch = peak.activations + peak.pipe_buffers;
      const double share = per_micro_batch > 0 ? peak.activations / per_micro_batch : 1.0;
      peak.activations = in_flight * share;
      peak.pipe_buffers = in_flight - peak.activations;
      peak.weight_gradient_activations = 0;
      peak.allocator = (peak.allocator_ratio - 1) * peak.allocated();
      peaks.push_back(peak);
    }
  }
  return peaks;
}

// The cost model as the plan settles it.
cost::CostModel costed_as_planned(const cost::CostModel& given, const plan::Plan& plan) {
  return given.with_options(costs_as_planned(plan, given.options()));
}

}  // namespace

std::vector<const StageReport*> PlanSimulation::pipeline_stages(int p) const {
  std::vector<const StageReport*> result;
  for (const auto& stage : stages) {
    if (stage.pipeline == p) result.push_back(&stage);
  }
  return result;
}

std::string track_name(const PlanSimulation& simulation, int rank) {
  int p = simulation.pipelines() - 1;
  while (p > 0 && simulation.first_rank[p] > rank) --p;
  const auto& schedule = simulation.schedules[p];
  const int local = rank - simulation.first_rank[p];
  std::string stages;
  for (int c = 0; c < schedule.chunks; ++c) {
    stages += (c == 0 ? "" : ",") + std::to_string(c * schedule.ranks + local);
  }
  const StageReport& stage = *simulation.pipeline_stages(p)[local];
  return fmt::format("{}stage {}: {} ×{} [{}]", p == 0 ? "" : fmt::format("pipeline {}, ", p),
                     stages, stage.gpu_type, stage.devices.size(),
                     plan::format_devices(stage.devices));
}

namespace {

// Per rank, memory_floor and what the plan may use of its device.
struct MemoryFloor {
  std::vector<double> floor;
  std::vector<double> limit;
};

MemoryFloor floor_and_limit(const cost::CostModel& given, const plan::Plan& plan) {
  const cost::CostModel costs = costed_as_planned(given, plan);
  PlanSimulation reports;
  MemoryFloor result;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const SimInput input = pipeline_input(costs, plan, p, {}, reports);
    const auto& pipeline = plan.pipeline(p);
    const auto compute =
        schedule::make_schedule(pipeline.schedule, pipeline.ranks(), pipeline.micro_batches,
                                pipeline.chunks, pipeline.warmup);
    for (int r = 0; r < compute.ranks; ++r) {
      double static_bytes = 0;
      for (int c = 0; c < compute.chunks; ++c) {
        static_bytes += input.stages[compute.stage_of(r, c)].static_bytes;
      }
      // The forwards before the first backward each keep their activations (Engine::compute).
      double activations = 0;
      for (const auto& op : compute.ops[r]) {
        if (op.kind != schedule::OpKind::forward) break;
        activations += input.stages[compute.stage_of(r, op.chunk)].activation_bytes;
      }
      result.floor.push_back(input.reserved_bytes[r] +
                             input.allocator_ratio[r] *
                                 (static_bytes + input.buffer_bytes[r] + activations));
    }
  }
  result.limit = std::move(reports.memory_limit);
  return result;
}

}  // namespace

std::vector<double> memory_floor(const cost::CostModel& costs, const plan::Plan& plan) {
  return floor_and_limit(costs, plan).floor;
}

bool overflows_before_any_backward(const cost::CostModel& costs, const plan::Plan& plan) {
  const MemoryFloor memory = floor_and_limit(costs, plan);
  for (size_t r = 0; r < memory.floor.size(); ++r) {
    if (memory.floor[r] > memory.limit[r]) return true;
  }
  return false;
}

PlanSimulation simulate_plan(const cost::CostModel& given, const plan::Plan& plan,
                             const SimOptions& options) {
  const cost::CostModel costs = costed_as_planned(given, plan);
  const auto& cluster = costs.cluster();
  const int64_t seq = costs.model().config().sequence_length(plan.seq_len);
  PlanSimulation result;
  std::vector<SimInput> inputs;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    result.first_rank.push_back(static_cast<int>(result.memory_capacity.size()));
    inputs.push_back(pipeline_input(costs, plan, p, options, result));
    inputs.back().schedule = plan::schedule_for(plan, p, costs.model().config().tied_embeddings);
    result.p2p = inputs.back().p2p;
  }
  std::vector<SimOutput> outputs;
  outputs.reserve(inputs.size());
  for (const auto& input : inputs) outputs.push_back(simulate(input));
  if (plan.pipeline_count() > 1) {
    // The sum across pipelines waits for the last of them; the compute before it is
    // the same, so a second run with that barrier gives each pipeline's finish.
    double barrier = 0;
    for (const auto& output : outputs) {
      for (const auto& rank : output.ranks) barrier = std::max(barrier, rank.reduced);
    }
    for (size_t p = 0; p < inputs.size(); ++p) {
      inputs[p].replica_barrier = barrier;
      outputs[p] = simulate(inputs[p]);
    }
  }
  for (auto& input : inputs) {
    result.schedules.push_back(std::move(input.schedule));
    // Scored without a timeline (the planner's candidates), the ops are read by no one and
    // would be copied with every copy of the result: millions of bytes on long pipelines.
    if (!options.timeline) result.schedules.back().ops = {};
  }
  for (auto& output : outputs) {
    result.output.iteration_time = std::max(result.output.iteration_time, output.iteration_time);
    result.output.simulated_ops += output.simulated_ops;
    for (auto& rank : output.ranks) result.output.ranks.push_back(rank);
    for (auto& track : output.timeline.tracks) {
      result.output.timeline.tracks.push_back(std::move(track));
    }
  }
  const double time = result.output.iteration_time;
  for (auto& stats : result.output.ranks) {
    // A pipeline that finishes early idles until the iteration ends, as in a bubble.
    stats.bubble = std::max(0.0, time - stats.busy - stats.comm_wait - stats.allreduce -
                                     stats.epilogue_sync() - stats.optimizer);
  }
  auto& tracks = result.output.timeline.tracks;
  for (size_t r = 0; r < tracks.size(); ++r) {
    tracks[r].name = track_name(result, static_cast<int>(r));
  }
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {
      tracks[result.first_rank[p] + r].devices = pipeline.stages[r].devices;
      tracks[result.first_rank[p] + r].pipeline = p;
      tracks[result.first_rank[p] + r].group = r;
    }
  }

  result.device_peaks = device_peaks(result);
  const double tokens = static_cast<double>(plan.global_batch()) * static_cast<double>(seq);
  result.tokens_per_s = tokens / time;
  result.model_flops =
      costs.model().iteration_flops(plan.global_batch(), seq, model::Recompute::none);
  result.achieved_flops_per_gpu = result.model_flops / time / result.devices;
  double peak = 0;
  for (const auto& stage : result.stages) {
    if (stage.stage != stage.rank) continue;  // another chunk of a device group counted
    const auto& type = cluster.gpu_type(stage.gpu_type);
    peak += type.peak_flops(costs.model().config().dtype, costs.model().config().tf32) *
            static_cast<double>(stage.devices.size());
    result.stand_ins = result.stand_ins || type.speed.has_value();
  }
  result.mfu = result.model_flops / time / peak;
  result.estimator = costs.options().estimator;
  return result;
}

}  // namespace hyperpipe::sim
