// Devices the planner treats as interchangeable: one GPU type inside one island.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/planner/stage_oracle.h"

namespace hyperpipe::planner {

struct DeviceClass {
  std::string name;  // "A100-40GB@ampere"
  std::string gpu_type;
  int island = 0;
  std::vector<int> devices;                    // global ids, node by node
  std::vector<std::vector<int>> node_devices;  // the same, per node
  int node_size = 1;                           // GPUs per node (the smallest node of the class)
  int nodes = 0;
  int count() const { return static_cast<int>(devices.size()); }
};

std::vector<DeviceClass> device_classes(const cluster::Cluster& cluster);

// Classes of more nodes than this give stages a power-of-two number of whole nodes: at
// that scale a group smaller than a node would make the search count GPUs one by one
// across hundreds of them, and every node count multiplies the shapes, while a node split
// between stages or an odd node count buys little (Alpa's submeshes and Metis's
// power-of-two groups draw similar lines).
inline constexpr int kSubNodeGroupsUpToNodes = 4;

// The device-group shapes a stage of this class may use: sizes that divide a node (so
// tensor-parallel groups never straddle nodes) or any number of whole nodes — in classes of
// more than kSubNodeGroupsUpToNodes nodes, only 1, 2, 4, … whole nodes; tp a power of two
// within a node that divides `tp_divisor` (the model's tensor_parallel_divisor(): heads,
// key/value heads and MLP columns split evenly); at most `max_dp` data-parallel ranks
// (each needs at least one sequence of the micro-batch); tp at most `max_tp`; dp exactly
// `only_dp` when that is not 0, tp exactly `only_tp` when that is not 0.
std::vector<Shape> class_shapes(const DeviceClass& cls, int64_t tp_divisor, int64_t max_dp,
                                int max_tp = std::numeric_limits<int>::max(), int only_dp = 0,
                                int only_tp = 0);

// Every order of every non-empty subset of `classes` (indices), shorter prefixes first in
// depth-first order: the class orders a pipeline may take.
std::vector<std::vector<int>> every_class_order(const std::vector<int>& classes);

// Device ids for each stage (in pipeline order) of one class: groups are handed out
// largest first, in pieces of at most a node, each piece inside one node (first fit), so
// no tensor-parallel group straddles two nodes. Throws std::invalid_argument when the
// pieces do not fit the class's nodes.
std::vector<std::vector<int>> assign_devices(const DeviceClass& cls, const std::vector<int>& sizes);

}  // namespace hyperpipe::planner
