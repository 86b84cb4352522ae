#include "hyperpipe/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "hyperpipe/cluster/gpu_catalogue.h"

namespace hyperpipe::cluster {

std::string_view to_string(LinkLevel level) {
  switch (level) {
    case LinkLevel::intra_node:
      return "intra_node";
    case LinkLevel::intra_island:
      return "intra_island";
    case LinkLevel::inter_island:
      return "inter_island";
  }
  return "inter_island";
}

Cluster::Cluster(std::string name, std::vector<GpuType> gpu_types, std::vector<Node> nodes,
                 std::vector<Island> islands, std::vector<Link> level_links,
                 std::vector<LinkOverride> overrides)
    : name_(std::move(name)),
      gpu_types_(std::move(gpu_types)),
      nodes_(std::move(nodes)),
      islands_(std::move(islands)),
      level_links_(std::move(level_links)),
      overrides_(std::move(overrides)) {
  for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) {
    for (int local = 0; local < nodes_[n].gpu_count; ++local) {
      devices_.push_back({static_cast<int>(devices_.size()), n, local});
    }
  }
}

const GpuType& Cluster::gpu_type(const std::string& name) const {
  // Spelled as the type is, almost always: the cost model asks per layer and range, and
  // the spelling-blind comparison builds two strings each time.
  for (const auto& type : gpu_types_) {
    if (type.name == name) return type;
  }
  for (const auto& type : gpu_types_) {
    if (same_gpu_name(type.name, name)) return type;
  }
  throw std::out_of_range("no GPU type '" + name + "' in cluster " + name_);
}

const GpuType& Cluster::device_type(int device) const {
  return gpu_type(nodes_.at(devices_.at(device).node).gpu_type);
}

double Cluster::device_memory(int device) const {
  return nodes_.at(devices_.at(device).node).memory_bytes;
}

std::vector<std::string> Cluster::used_gpu_types() const {
  std::vector<std::string> types;
  for (const auto& node : nodes_) {
    const std::string& type = gpu_type(node.gpu_type).name;
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  return types;
}

int Cluster::count_devices_of_type(const std::string& type) const {
  int count = 0;
  for (const auto& node : nodes_) {
    if (same_gpu_name(node.gpu_type, type)) count += node.gpu_count;
  }
  return count;
}

LinkLevel Cluster::level_between(int device_a, int device_b) const {
  const int node_a = devices_.at(device_a).node;
  const int node_b = devices_.at(device_b).node;
  if (node_a == node_b) return LinkLevel::intra_node;
  if (nodes_[node_a].island == nodes_[node_b].island) return LinkLevel::intra_island;
  return LinkLevel::inter_island;
}

const Link& Cluster::level_link(LinkLevel level) const {
  return level_links_.at(static_cast<size_t>(level));
}

bool Cluster::names_match(const std::string& name, int node) const {
  return nodes_[node].name == name || islands_[nodes_[node].island].name == name;
}

Link Cluster::link_between(int device_a, int device_b) const {
  if (device_a == device_b) return {std::numeric_limits<double>::infinity(), 0.0};
  const int node_a = devices_.at(device_a).node;
  const int node_b = devices_.at(device_b).node;
  // The last override that matches wins, so a file can state a broad rule and then
  // exceptions to it. Inside one node only an override naming that node twice applies;
  // an island's override is about the links between its nodes.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (node_a == node_b) {
      if (it->first == nodes_[node_a].name && it->second == nodes_[node_a].name) return it->link;
      continue;
    }
    const bool forward = names_match(it->first, node_a) && names_match(it->second, node_b);
    const bool backward = names_match(it->first, node_b) && names_match(it->second, node_a);
    if (forward || backward) return it->link;
  }
  return level_link(level_between(device_a, device_b));
}

Link Cluster::slowest_ring_link(const std::vector<int>& devices) const {
  Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  if (devices.size() < 2) return slowest;
  // A link is a function of the two nodes (for distinct devices): neighbours on the nodes
  // of the pair before add nothing (rings of hundreds of GPUs span few nodes).
  int last_a = -1;
  int last_b = -1;
  for (size_t i = 0; i < devices.size(); ++i) {
    const int a = devices[i];
    const int b = devices[(i + 1) % devices.size()];
    const int node_a = devices_.at(a).node;
    const int node_b = devices_.at(b).node;
    if (a != b && node_a == last_a && node_b == last_b) continue;
    slowest = slower_link(slowest, link_between(a, b));
    if (a != b) {
      last_a = node_a;
      last_b = node_b;
    }
  }
  return slowest;
}

double table_seconds(const std::vector<LinkSample>& table, double bytes, bool all_reduce) {
  const auto time = [all_reduce](const LinkSample& s) {
    return all_reduce ? s.all_reduce : s.one_way;
  };
  if (bytes <= table.front().bytes) return time(table.front());
  for (size_t i = 1; i < table.size(); ++i) {
    if (bytes <= table[i].bytes) {
      const double share =
          std::log(bytes / table[i - 1].bytes) / std::log(table[i].bytes / table[i - 1].bytes);
      return time(table[i - 1]) + share * (time(table[i]) - time(table[i - 1]));
    }
  }
  if (table.size() == 1) return time(table.back()) * bytes / table.back().bytes;
  const LinkSample& last = table.back();
  const LinkSample& before = table[table.size() - 2];
  const double seconds_per_byte = (time(last) - time(before)) / (last.bytes - before.bytes);
  return time(last) + (bytes - last.bytes) * std::max(0.0, seconds_per_byte);
}

Link slower_link(const Link& a, const Link& b) {
  Link result = b.bandwidth < a.bandwidth ? b : a;
  result.latency = std::max(a.latency, b.latency);
  return result;
}

}  // namespace hyperpipe::cluster
