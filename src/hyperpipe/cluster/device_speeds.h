// Devices that run slower than their type promises (throttled, shared with another job,
// a slower replacement), or faster (a faster replacement, a profile taken on a busy
// host): a cluster the planner can plan for as it plans any other. Each
// set of a node's devices slowed alike moves to a node of its own, of a type of its own
// whose peaks, memory bandwidth and stand-in speed are the original's times the factor;
// it stays in its island, and its links to the devices it shared a node with stay what
// they were.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"

namespace hyperpipe::cluster {

struct SlowedType {
  std::string original;  // the type it was derived from
  double factor = 1;     // of the original's speed
};

struct SlowedCluster {
  Cluster cluster;
  std::vector<int> original;                // original[id in `cluster`]: its id before
  std::map<std::string, SlowedType> types;  // the derived types, by name
};

// "V100-16GB at 0.50×".
std::string slowed_type_name(const std::string& type, double factor);

// `factors`: device id → its speed over its type's (positive; 1 leaves it as it is).
// Throws std::invalid_argument for an unknown device or a factor that is not positive.
SlowedCluster slow_devices(const Cluster& cluster, const std::map<int, double>& factors);

}  // namespace hyperpipe::cluster
