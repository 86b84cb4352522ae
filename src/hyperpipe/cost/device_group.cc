#include "hyperpipe/cost/device_group.h"

#include <algorithm>
#include <stdexcept>

#include "hyperpipe/cluster/gpu_catalogue.h"

namespace hyperpipe::cost {

DeviceGroup make_device_group(const cluster::Cluster& cluster, const std::vector<int>& devices,
                              int dp, int tp) {
  if (dp < 1 || tp < 1 || static_cast<int>(devices.size()) != dp * tp) {
    throw std::invalid_argument("a device group needs dp * tp devices");
  }
  DeviceGroup group;
  const cluster::GpuType& first = cluster.device_type(devices.front());
  group.gpu_type = first.name;
  group.dp = dp;
  group.tp = tp;
  group.devices = devices;
  group.memory_bytes = cluster.device_memory(devices.front());
  for (int device : devices) {
    // One type entry is one type: names (spelling-blind, so built anew) are compared only
    // where the entries differ. The planner builds groups of hundreds of GPUs per plan.
    const cluster::GpuType& type = cluster.device_type(device);
    if (&type != &first && !cluster::same_gpu_name(type.name, group.gpu_type)) {
      throw std::invalid_argument("a device group mixes GPU types");
    }
    group.memory_bytes = std::min(group.memory_bytes, cluster.device_memory(device));
  }
  const std::vector<int> tp_ring(devices.begin(), devices.begin() + tp);
  std::vector<int> dp_ring;
  dp_ring.reserve(static_cast<size_t>(dp));
  for (size_t r = 0; r < static_cast<size_t>(dp); ++r) dp_ring.push_back(devices[r * tp]);
  group.tp_link = cluster.slowest_ring_link(tp_ring);
  group.dp_link = cluster.slowest_ring_link(dp_ring);
  return group;
}

DeviceGroup first_devices_of_type(const cluster::Cluster& cluster, const std::string& gpu_type,
                                  int dp, int tp) {
  std::vector<int> devices;
  for (const auto& device : cluster.devices()) {
    if (static_cast<int>(devices.size()) == dp * tp) break;
    if (cluster::same_gpu_name(cluster.device_type(device.id).name, gpu_type)) {
      devices.push_back(device.id);
    }
  }
  if (static_cast<int>(devices.size()) != dp * tp) {
    throw std::invalid_argument("the cluster has too few GPUs of type " + gpu_type);
  }
  return make_device_group(cluster, devices, dp, tp);
}

int shard_share_of_cut(const DeviceGroup& from, const DeviceGroup& to) {
  return from.tp == to.tp ? from.tp : 1;
}

int shards_fed_per_sender(const DeviceGroup& from, const DeviceGroup& to) {
  return std::max(1, (to.tp + from.tp - 1) / from.tp);
}

}  // namespace hyperpipe::cost
