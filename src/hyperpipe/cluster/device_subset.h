// Some of a cluster's devices as a cluster of their own: what an elastic run plans on
// once devices are lost, with a way back to the devices' ids in the whole cluster (plans
// keep naming those, so a device is the same process slot and GPU before and after).
#pragma once

#include <vector>

#include "hyperpipe/cluster/cluster.h"

namespace hyperpipe::cluster {

struct DeviceSubset {
  Cluster cluster;            // the kept devices alone, node by node as in the whole
  std::vector<int> original;  // original[id in `cluster`]: its id in the whole cluster
};

// The cluster of `kept` (ids of `whole`, any order, no repeats): every node keeps its
// name, type, memory and island with as many GPUs as it has kept (a node with none goes,
// and an island with no node left), links and overrides as they were. Throws
// std::invalid_argument for an id out of range, a repeat, or nothing kept.
DeviceSubset keep_devices(const Cluster& whole, const std::vector<int>& kept);

}  // namespace hyperpipe::cluster
