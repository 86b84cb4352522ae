// The devices that run one pipeline stage, used as dp × tp, and the links they talk over.
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"

namespace hyperpipe::cost {

struct DeviceGroup {
  std::string gpu_type;
  int dp = 1;                // inner data-parallel degree: the micro-batch is split over dp ranks
  int tp = 1;                // tensor-parallel degree (Megatron), kept inside one node
  cluster::Link tp_link;     // the slowest link of a tensor-parallel ring
  cluster::Link dp_link;     // the slowest link of a data-parallel ring
  double memory_bytes = 0;   // memory of the smallest device in the group
  std::vector<int> devices;  // rank r = dp_index · tp + tp_index
};

// A group of the given devices (all of one GPU type, dp · tp of them). Throws
// std::invalid_argument if the devices disagree with dp · tp or mix GPU types.
DeviceGroup make_device_group(const cluster::Cluster& cluster, const std::vector<int>& devices,
                              int dp, int tp);

// The first dp · tp devices of `gpu_type`, node by node: what a stage of that type
// typically gets. Throws std::invalid_argument if the cluster has fewer.
DeviceGroup first_devices_of_type(const cluster::Cluster& cluster, const std::string& gpu_type,
                                  int dp, int tp);

// How an activation (or its gradient) crosses from one stage's group to the next under
// tensor parallelism, as the runtime moves it: between groups of equal tp each shard sends
// its 1/tp part and the receiving shards all-gather the rest (Megatron-LM's scatter and
// gather); otherwise each sending shard sends the whole tensor to every shard it feeds.
// The part of the activation one message carries: tp for equal groups, else 1.
int shard_share_of_cut(const DeviceGroup& from, const DeviceGroup& to);
// How many receiving shards one sending shard feeds: ceil(tp_to / tp_from), at least 1.
int shards_fed_per_sender(const DeviceGroup& from, const DeviceGroup& to);

}  // namespace hyperpipe::cost
