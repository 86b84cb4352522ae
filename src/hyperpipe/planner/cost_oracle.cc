#include "hyperpipe/planner/cost_oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace hyperpipe::planner {
namespace {

size_t recompute_index(model::Recompute recompute) {
  return static_cast<size_t>(recompute);
}

// The link between a stage of class `from` and the next stage, of class `to`. Inside one
// class the next group may sit on another node, so the slowest link between its nodes
// counts (the simulator later uses the real placement).
cluster::Link class_link(const cluster::Cluster& cluster, const DeviceClass& from,
                         const DeviceClass& to, bool same) {
  if (!same) return cluster.link_between(from.devices.front(), to.devices.front());
  if (from.count() < 2) return {1e30, 0.0};
  const int other = from.nodes > 1 ? from.devices[from.node_size] : from.devices[1];
  return cluster.link_between(from.devices.front(), other);
}

// The tied embedding's gradient sum between a first stage of one class and a last stage of
// another (sim/plan_simulation.cc sums it the same way), at its least over both classes'
// shapes; within one class the two stages may share a node, so its fastest link counts.
std::vector<std::vector<double>> tied_embedding_tails(
    const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
    const std::vector<std::vector<Shape>>& shapes) {
  const auto& config = costs.model().config();
  const size_t n = classes.size();
  std::vector<std::vector<double>> tail(n, std::vector<double>(n, 0.0));
  if (!config.tied_embeddings) return tail;
  const double matrix = static_cast<double>(config.vocab) * static_cast<double>(config.hidden) *
                        model::bytes_per_element(config.dtype);
  const auto& cluster = costs.cluster();
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;  // may be one group, or two on one node: bounded by 0
      const auto link =
          cluster.link_between(classes[a].devices.front(), classes[b].devices.front());
      double least = std::numeric_limits<double>::infinity();
      for (const Shape& first : shapes[a]) {
        for (const Shape& last : shapes[b]) {
          const double bytes = first.tp == last.tp ? matrix / first.tp : matrix;
          const int ranks = first.tp == last.tp ? first.dp + last.dp : first.size() + last.size();
          least = std::min(least, costs.allreduce_time(bytes, ranks, link));
        }
      }
      tail[a][b] = std::isfinite(least) ? least : 0.0;
    }
  }
  return tail;
}

// One layer's costs on a device group, per recomputation option.
struct LayerCosts {
  double time[3] = {0, 0, 0};
  double activations[3] = {0, 0, 0};
  double static_bytes = 0;  // weights, gradients, optimizer state, buffers, logits
  // What a device of a stage ending or starting here gives to the allocator's count: its
  // usable memory less what it holds outside the allocator, over the allocator's ratio,
  // less the workspaces.
  double allocatable = 0;
  double allreduce = 0;
  double optimizer = 0;
};

LayerCosts layer_costs(const cost::CostModel& costs, int layer, const cost::DeviceGroup& group,
                       int64_t micro_batch, int64_t seq_len) {
  LayerCosts one;
  for (model::Recompute r : kRecomputeOptions) {
    const size_t option = recompute_index(r);
    one.time[option] = costs.range_time(layer, layer + 1, group, micro_batch, seq_len, r).total();
    const auto memory = costs.stage_memory(layer, layer + 1, group, micro_batch, seq_len, 1, r);
    one.activations[option] = memory.activations;
    if (r == model::Recompute::none) {
      one.static_bytes = memory.static_allocated() - memory.workspaces;
      one.allocatable = (costs.usable_memory(group.memory_bytes) - memory.outside_allocator()) /
                            memory.allocator_ratio -
                        memory.workspaces;
    }
  }
  one.allreduce = costs.gradient_allreduce_time(layer, layer + 1, group);
  one.optimizer = costs.optimizer_time(layer, layer + 1, group);
  return one;
}

}  // namespace

CostOracle::CostOracle(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
                       int64_t micro_batch, int64_t seq_len, int max_tp, int only_dp, int only_tp)
    : layers_(costs.model().num_layers()), classes_(classes) {
  const auto& cluster = costs.cluster();
  const auto divisor = costs.model().config().tensor_parallel_divisor();
  for (size_t c = 0; c < classes_.size(); ++c) {
    const DeviceClass& cls = classes_[c];
    shapes_.push_back(class_shapes(cls, divisor, micro_batch, max_tp, only_dp, only_tp));
    std::vector<Table> tables;
    for (const Shape& shape : shapes_.back()) {
      Table table;
      const std::vector<int> devices(cls.devices.begin(), cls.devices.begin() + shape.size());
      table.group = cost::make_device_group(cluster, devices, shape.dp, shape.tp);
      table.static_bytes.assign(layers_ + 1, 0.0);
      table.epilogue.assign(layers_ + 1, 0.0);
      table.optimizer.assign(layers_ + 1, 0.0);
      // The all-reduce is affine in its bytes (cost_model.h): f(0⁺) = 2 f(x) − f(2x).
      const double layer_bytes = costs.range_params(0, 1, shape.tp) *
                                 model::bytes_per_element(costs.model().config().dtype);
      table.epilogue_fixed =
          std::max(0.0, 2 * costs.allreduce_time(layer_bytes, shape.dp, table.group.dp_link) -
                            costs.allreduce_time(2 * layer_bytes, shape.dp, table.group.dp_link));
      // Layers of one kind cost the same (model/layer.h: a layer is its kind and the
      // model's config; profiles are keyed by kind), so each kind is asked once.
      std::map<model::LayerKind, LayerCosts> of_kind;
      for (int l = 0; l < layers_; ++l) {
        const auto kind = costs.model().layers()[l].kind();
        auto found = of_kind.find(kind);
        if (found == of_kind.end()) {
          found =
              of_kind.emplace(kind, layer_costs(costs, l, table.group, micro_batch, seq_len)).first;
        }
        const LayerCosts& one = found->second;
        const double allreduce = one.allreduce;
        const double optimizer = one.optimizer;
        table.optimizer[l + 1] = table.optimizer[l] + optimizer;
        table.epilogue[l + 1] = table.epilogue[l] +
                                (allreduce > 0 ? allreduce - table.epilogue_fixed : 0.0) +
                                optimizer;
      }
      for (model::Recompute r : kRecomputeOptions) {
        const size_t option = recompute_index(r);
        auto& time = table.time[option];
        auto& act = table.activations[option];
        time.assign(layers_ + 1, 0.0);
        act.assign(layers_ + 1, 0.0);
        for (int l = 0; l < layers_; ++l) {
          const LayerCosts& one = of_kind.at(costs.model().layers()[l].kind());
          time[l + 1] = time[l] + one.time[option];
          act[l + 1] = act[l] + one.activations[option];
        }
      }
      // The least over the kinds: a stage's groups depend on where it sits (cost_model.h).
      table.available = std::numeric_limits<double>::infinity();
      for (int l = 0; l < layers_; ++l) {
        const LayerCosts& one = of_kind.at(costs.model().layers()[l].kind());
        table.static_bytes[l + 1] = table.static_bytes[l] + one.static_bytes;
        table.available = std::min(table.available, one.allocatable);
      }
      table.link.resize(classes_.size());
      for (size_t next = 0; next < classes_.size(); ++next) {
        const auto link = class_link(cluster, cls, classes_[next], next == c);
        const auto to = cost::make_device_group(cluster, {classes_[next].devices.front()}, 1, 1);
        auto& row = table.link[next];
        row.assign(layers_ + 1, 0.0);
        std::map<model::LayerKind, double> after_kind;  // the cut after a layer of each kind
        for (int end = 1; end <= layers_; ++end) {
          const auto kind = costs.model().layers()[end - 1].kind();
          auto found = after_kind.find(kind);
          if (found == after_kind.end()) {
            found = after_kind
                        .emplace(
                            kind,
                            costs.cut_transfer(end - 1, micro_batch, seq_len, table.group, to, link)
                                .seconds)
                        .first;
          }
          row[end] = found->second;
        }
      }
      tables.push_back(std::move(table));
    }
    tables_.push_back(std::move(tables));
  }
  tail_ = tied_embedding_tails(costs, classes_, shapes_);
}

}  // namespace hyperpipe::planner
