#include "hyperpipe/cluster/device_subset.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hyperpipe::cluster {

DeviceSubset keep_devices(const Cluster& whole, const std::vector<int>& kept) {
  const int device_count = static_cast<int>(whole.devices().size());
  if (kept.empty()) throw std::invalid_argument("no device kept of cluster " + whole.name());
  std::vector<bool> keep(static_cast<size_t>(device_count), false);
  for (const int id : kept) {
    if (id < 0 || id >= device_count) {
      throw std::invalid_argument(fmt::format("device {} is not one of cluster {}'s 0-{}", id,
                                              whole.name(), device_count - 1));
    }
    if (keep[static_cast<size_t>(id)]) {
      throw std::invalid_argument(fmt::format("device {} kept twice", id));
    }
    keep[static_cast<size_t>(id)] = true;
  }
  std::vector<int> kept_per_node(whole.nodes().size(), 0);
  std::vector<int> original;
  // Devices are numbered node by node, so the kept ones in id order are the new numbering.
  for (const auto& device : whole.devices()) {
    if (!keep[static_cast<size_t>(device.id)]) continue;
    ++kept_per_node[static_cast<size_t>(device.node)];
    original.push_back(device.id);
  }
  // Islands keep their order; those with no node left go, and node indices follow.
  std::vector<int> island_index(whole.islands().size(), -1);
  std::vector<Island> islands;
  std::vector<Node> nodes;
  for (size_t i = 0; i < whole.islands().size(); ++i) {
    Island island{whole.islands()[i].name, {}};
    for (const int n : whole.islands()[i].nodes) {
      if (kept_per_node[static_cast<size_t>(n)] > 0) island.nodes.push_back(n);
    }
    if (island.nodes.empty()) continue;
    island_index[i] = static_cast<int>(islands.size());
    islands.push_back(std::move(island));
  }
  std::vector<int> node_index(whole.nodes().size(), -1);
  for (size_t n = 0; n < whole.nodes().size(); ++n) {
    if (kept_per_node[n] == 0) continue;
    Node node = whole.nodes()[n];
    node.gpu_count = kept_per_node[n];
    node.island = island_index[static_cast<size_t>(node.island)];
    node_index[n] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(node));
  }
  for (auto& island : islands) {
    for (int& n : island.nodes) n = node_index[static_cast<size_t>(n)];
  }
  return {Cluster(whole.name(), whole.gpu_types(), std::move(nodes), std::move(islands),
                  whole.level_links(), whole.overrides()),
          std::move(original)};
}

}  // namespace hyperpipe::cluster
