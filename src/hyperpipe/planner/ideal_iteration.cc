#include "hyperpipe/planner/ideal_iteration.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "hyperpipe/cluster/gpu_catalogue.h"

namespace hyperpipe::planner {
namespace {

// The sequences one device of a stage can be given: ceil(micro-batch / dp) for every
// micro-batch size of the space and every dp up to the batch.
std::set<int64_t> per_device_shares(const BatchSettings& batch) {
  std::set<int64_t> shares;
  for (const int64_t micro_batch : batch.micro_batch_sizes) {
    for (int64_t dp = 1; dp <= micro_batch; ++dp) shares.insert((micro_batch + dp - 1) / dp);
  }
  return shares;
}

// Per node of the type: its devices' least seconds per sequence (nodes of one type differ
// only in their links, which tensor parallelism crosses).
double node_seconds_per_sequence(const cost::CostModel& costs, const BatchSettings& batch,
                                 const std::vector<int>& node_devices,
                                 const std::set<int64_t>& shares) {
  const auto& model = costs.model();
  const int64_t seq_len = model.config().sequence_length(batch.seq_len);
  double best = std::numeric_limits<double>::infinity();
  for (int tp = 1; tp <= static_cast<int>(node_devices.size()); tp *= 2) {
    const std::vector<int> devices(node_devices.begin(), node_devices.begin() + tp);
    const auto group = cost::make_device_group(costs.cluster(), devices, 1, tp);
    for (const int64_t share : shares) {
      const auto time =
          costs.range_time(0, model.num_layers(), group, share, seq_len, model::Recompute::none);
      best = std::min(best, time.total() * tp / static_cast<double>(share));
    }
  }
  return best;
}

std::vector<std::vector<int>> devices_by_node(const cluster::Cluster& cluster) {
  std::vector<std::vector<int>> nodes(cluster.nodes().size());
  for (const auto& device : cluster.devices()) nodes[device.node].push_back(device.id);
  return nodes;
}

}  // namespace

double device_seconds_per_sequence(const cost::CostModel& costs, const BatchSettings& batch,
                                   const std::string& gpu_type) {
  const auto& cluster = costs.cluster();
  const auto shares = per_device_shares(batch);
  const auto nodes = devices_by_node(cluster);
  double best = std::numeric_limits<double>::infinity();
  for (size_t node = 0; node < nodes.size(); ++node) {
    if (nodes[node].empty() || !cluster::same_gpu_name(cluster.nodes()[node].gpu_type, gpu_type)) {
      continue;
    }
    best = std::min(best, node_seconds_per_sequence(costs, batch, nodes[node], shares));
  }
  return best;
}

double ideal_iteration(const cost::CostModel& costs, const BatchSettings& batch) {
  const auto& cluster = costs.cluster();
  const auto shares = per_device_shares(batch);
  // Nodes alike in GPU type, size and the links inside them compute alike: cost one of each.
  using NodeKind = std::tuple<std::string, size_t, double, double>;
  std::map<NodeKind, double> seconds_by_kind;
  double sequences_per_second = 0;
  for (const auto& devices : devices_by_node(cluster)) {
    if (devices.empty()) continue;
    const auto& node = cluster.nodes()[cluster.devices()[devices.front()].node];
    const auto inner = cluster.slowest_ring_link(devices);
    const NodeKind kind{node.gpu_type, devices.size(), inner.bandwidth, inner.latency};
    auto found = seconds_by_kind.find(kind);
    if (found == seconds_by_kind.end()) {
      found =
          seconds_by_kind.emplace(kind, node_seconds_per_sequence(costs, batch, devices, shares))
              .first;
    }
    sequences_per_second += static_cast<double>(devices.size()) / found->second;
  }
  return static_cast<double>(batch.global_batch) / sequences_per_second;
}

}  // namespace hyperpipe::planner
