#include "hyperpipe/planner/cost_oracle.h"

#include <algorithm>

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

}  // namespace

CostOracle::CostOracle(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
                       int64_t micro_batch, int64_t seq_len, int max_tp)
    : layers_(costs.model().num_layers()), classes_(classes) {
  const auto& cluster = costs.cluster();
  const auto divisor = costs.model().config().tensor_parallel_divisor();
  for (size_t c = 0; c < classes_.size(); ++c) {
    const DeviceClass& cls = classes_[c];
    shapes_.push_back(class_shapes(cls, divisor, micro_batch, max_tp));
    std::vector<Table> tables;
    for (const Shape& shape : shapes_.back()) {
      Table table;
      const std::vector<int> devices(cls.devices.begin(), cls.devices.begin() + shape.size());
      table.group = cost::make_device_group(cluster, devices, shape.dp, shape.tp);
      table.static_bytes.assign(layers_ + 1, 0.0);
      for (model::Recompute r : kRecomputeOptions) {
        auto& time = table.time[recompute_index(r)];
        auto& act = table.activations[recompute_index(r)];
        time.assign(layers_ + 1, 0.0);
        act.assign(layers_ + 1, 0.0);
        for (int l = 0; l < layers_; ++l) {
          const auto t = costs.range_time(l, l + 1, table.group, micro_batch, seq_len, r);
          const auto m = costs.stage_memory(l, l + 1, table.group, micro_batch, seq_len, 1, r);
          time[l + 1] = time[l] + t.total();
          act[l + 1] = act[l] + m.activations;
          if (r == model::Recompute::none) {
            table.static_bytes[l + 1] =
                table.static_bytes[l] + m.weights + m.gradients + m.optimizer;
            table.available = table.group.memory_bytes - m.reserved;
          }
        }
      }
      table.link.resize(classes_.size());
      for (size_t next = 0; next < classes_.size(); ++next) {
        const auto link = class_link(cluster, cls, classes_[next], next == c);
        const auto to = cost::make_device_group(cluster, {classes_[next].devices.front()}, 1, 1);
        auto& row = table.link[next];
        row.assign(layers_ + 1, 0.0);
        for (int end = 1; end <= layers_; ++end) {
          row[end] =
              costs.cut_transfer(end - 1, micro_batch, seq_len, table.group, to, link).seconds;
        }
      }
      tables.push_back(std::move(table));
    }
    tables_.push_back(std::move(tables));
  }
}

}  // namespace hyperpipe::planner
