#include "hyperpipe/planner/device_class.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

namespace hyperpipe::planner {

std::vector<DeviceClass> device_classes(const cluster::Cluster& cluster) {
  std::vector<DeviceClass> classes;
  std::map<std::pair<std::string, int>, size_t> index;
  for (int n = 0; n < static_cast<int>(cluster.nodes().size()); ++n) {
    const auto& node = cluster.nodes()[n];
    const std::string& type = cluster.gpu_type(node.gpu_type).name;
    const auto key = std::pair{type, node.island};
    auto it = index.find(key);
    if (it == index.end()) {
      DeviceClass cls;
      cls.name = type + "@" + cluster.islands()[node.island].name;
      cls.gpu_type = type;
      cls.island = node.island;
      cls.node_size = node.gpu_count;
      it = index.emplace(key, classes.size()).first;
      classes.push_back(cls);
    }
    DeviceClass& cls = classes[it->second];
    cls.node_size = std::min(cls.node_size, node.gpu_count);
    ++cls.nodes;
    cls.node_devices.emplace_back();
    for (const auto& device : cluster.devices()) {
      if (device.node != n) continue;
      cls.devices.push_back(device.id);
      cls.node_devices.back().push_back(device.id);
    }
  }
  return classes;
}

std::vector<Shape> class_shapes(const DeviceClass& cls, int64_t tp_divisor, int64_t max_dp,
                                int max_tp, int only_dp, int only_tp) {
  std::vector<int> sizes;
  const int smallest = cls.nodes > kSubNodeGroupsUpToNodes ? cls.node_size : 1;  // see .h
  for (int size = smallest; size <= cls.node_size; ++size) {
    if (cls.node_size % size == 0) sizes.push_back(size);
  }
  const bool large = cls.nodes > kSubNodeGroupsUpToNodes;
  for (int nodes = 2; nodes <= cls.nodes; nodes = large ? nodes * 2 : nodes + 1) {
    sizes.push_back(nodes * cls.node_size);
  }
  std::vector<Shape> shapes;
  for (int size : sizes) {
    for (int tp = 1; tp <= std::min({size, cls.node_size, max_tp}); tp *= 2) {
      if (size % tp != 0 || cls.node_size % tp != 0 || tp_divisor % tp != 0) continue;
      if (size / tp > max_dp || (only_dp != 0 && size / tp != only_dp)) continue;
      if (only_tp != 0 && tp != only_tp) continue;
      shapes.push_back({size / tp, tp});
    }
  }
  return shapes;
}

namespace {

void orders_from(const std::vector<int>& classes, std::vector<int>& prefix,
                 std::vector<bool>& taken, std::vector<std::vector<int>>& out) {
  if (!prefix.empty()) out.push_back(prefix);
  for (size_t i = 0; i < classes.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    prefix.push_back(classes[i]);
    orders_from(classes, prefix, taken, out);
    prefix.pop_back();
    taken[i] = false;
  }
}

}  // namespace

std::vector<std::vector<int>> every_class_order(const std::vector<int>& classes) {
  std::vector<std::vector<int>> out;
  std::vector<int> prefix;
  std::vector<bool> taken(classes.size(), false);
  orders_from(classes, prefix, taken, out);
  return out;
}

std::vector<std::vector<int>> assign_devices(const DeviceClass& cls,
                                             const std::vector<int>& sizes) {
  std::vector<size_t> by_size(sizes.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<size_t> used(cls.node_devices.size(), 0);  // devices taken per node
  std::vector<std::vector<int>> groups(sizes.size());
  for (size_t stage : by_size) {
    const int piece = std::min(sizes[stage], cls.node_size);
    for (int taken = 0; taken < sizes[stage]; taken += piece) {
      size_t node = 0;
      while (node < used.size() && used[node] + piece > cls.node_devices[node].size()) ++node;
      if (node == used.size()) {
        throw std::invalid_argument("stage groups do not fit the nodes of class " + cls.name);
      }
      const auto& devices = cls.node_devices[node];
      groups[stage].insert(groups[stage].end(), devices.begin() + static_cast<long>(used[node]),
                           devices.begin() + static_cast<long>(used[node] + piece));
      used[node] += piece;
    }
  }
  return groups;
}

}  // namespace hyperpipe::planner
