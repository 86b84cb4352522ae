#include "hyperpipe/cluster/device_speeds.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace hyperpipe::cluster {

std::string slowed_type_name(const std::string& type, double factor) {
  return fmt::format("{} at {:.2f}×", type, factor);
}

SlowedCluster slow_devices(const Cluster& cluster, const std::map<int, double>& factors) {
  const int device_count = static_cast<int>(cluster.devices().size());
  for (const auto& [device, factor] : factors) {
    if (device < 0 || device >= device_count) {
      throw std::invalid_argument(
          fmt::format("no device {} in cluster {}", device, cluster.name()));
    }
    if (!(factor > 0 && std::isfinite(factor))) {
      throw std::invalid_argument(
          fmt::format("device {}'s speed factor {} is not a positive number", device, factor));
    }
  }
  const auto factor_of = [&](int device) {
    const auto found = factors.find(device);
    return found == factors.end() ? 1.0 : found->second;
  };
  SlowedCluster result{cluster, {}, {}};
  std::vector<GpuType> types = cluster.gpu_types();
  std::vector<Node> nodes;
  std::vector<LinkOverride> overrides = cluster.overrides();
  std::vector<Island> islands = cluster.islands();
  for (auto& island : islands) island.nodes.clear();
  for (size_t n = 0; n < cluster.nodes().size(); ++n) {
    const Node& node = cluster.nodes()[n];
    // This node's devices by factor, in id order; factor 1 keeps the node's own name.
    std::map<double, std::vector<int>> by_factor;
    std::vector<int> members;
    for (const auto& device : cluster.devices()) {
      if (device.node != static_cast<int>(n)) continue;
      by_factor[factor_of(device.id)].push_back(device.id);
      members.push_back(device.id);
    }
    const Link inside = members.size() > 1 ? cluster.link_between(members[0], members[1])
                                           : cluster.level_link(LinkLevel::intra_node);
    // Slowest first; each becomes a node (the devices at factor 1 keep the node's name).
    for (const auto& [factor, devices] : by_factor) {
      Node part = node;
      part.gpu_count = static_cast<int>(devices.size());
      if (factor != 1) {
        const GpuType& type = cluster.gpu_type(node.gpu_type);
        GpuType slowed = type;
        slowed.name = slowed_type_name(type.name, factor);
        slowed.peak = {type.peak.fp32 * factor, type.peak.tf32 * factor, type.peak.fp16 * factor,
                       type.peak.bf16 * factor};
        slowed.memory_bandwidth = type.memory_bandwidth * factor;
        if (type.speed) slowed.speed = *type.speed * factor;
        slowed.source = fmt::format("{} measured at {:.2f} of its speed", type.name, factor);
        if (!result.types.count(slowed.name)) {
          result.types[slowed.name] = {type.name, factor};
          types.push_back(slowed);
        }
        part.name = fmt::format("{} ({})", node.name, slowed.name);
        part.gpu_type = slowed.name;
        // Its links: inside itself and to the rest of its node as inside the node was,
        // and every override of the node's links to others as well.
        overrides.push_back({part.name, part.name, inside});
        overrides.push_back({part.name, node.name, inside});
        for (const auto& [other_factor, other] : by_factor) {
          if (other_factor < factor && other_factor != 1) {
            overrides.push_back(
                {part.name,
                 fmt::format("{} ({})", node.name, slowed_type_name(type.name, other_factor)),
                 inside});
          }
        }
        for (const auto& rule : cluster.overrides()) {
          if (rule.first == node.name && rule.second != node.name) {
            overrides.push_back({part.name, rule.second, rule.link});
          } else if (rule.second == node.name && rule.first != node.name) {
            overrides.push_back({rule.first, part.name, rule.link});
          }
        }
      }
      islands[static_cast<size_t>(node.island)].nodes.push_back(static_cast<int>(nodes.size()));
      nodes.push_back(std::move(part));
      result.original.insert(result.original.end(), devices.begin(), devices.end());
    }
  }
  result.cluster = Cluster(cluster.name(), std::move(types), std::move(nodes), std::move(islands),
                           cluster.level_links(), std::move(overrides));
  return result;
}

}  // namespace hyperpipe::cluster
