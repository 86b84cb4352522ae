// A heterogeneous cluster: nodes of GPU types, grouped into islands, joined by links
// whose speed depends on how far apart two devices are.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/gpu_type.h"

namespace hyperpipe::cluster {

// How far apart two devices are; each level has its own link speed.
enum class LinkLevel { intra_node, intra_island, inter_island };
std::string_view to_string(LinkLevel level);

// One message size measured on a link.
struct LinkSample {
  double bytes = 0;
  double one_way = 0;     // seconds, point to point
  double all_reduce = 0;  // seconds, over two ranks; 0 where not measured
};

struct Link {
  Link() = default;
  Link(double bandwidth, double latency) : bandwidth(bandwidth), latency(latency) {}

  double bandwidth = 0;  // bytes/s, one direction
  double latency = 0;    // seconds
  // The share of `bandwidth` transfers reach; unset: the cost model's default.
  std::optional<double> efficiency;
  // Measured times by message size, ascending; the cost model prefers them to the α–β
  // figures above (which then summarise them).
  std::vector<LinkSample> table;

  bool has_all_reduce_table() const { return !table.empty() && table.front().all_reduce > 0; }
};

// Seconds for a message of `bytes` from a link's table (one way, or the two-rank
// all-reduce): linear in log size between the neighbouring sizes; past the largest, at the
// last two sizes' marginal rate; below the smallest, the smallest's time (latency-bound).
double table_seconds(const std::vector<LinkSample>& table, double bytes, bool all_reduce);

// What a transfer crossing both links sees: the lower bandwidth (with that link's
// efficiency and table) and the higher latency.
Link slower_link(const Link& a, const Link& b);

struct Node {
  std::string name;
  std::string gpu_type;  // a name in Cluster::gpu_types()
  int gpu_count = 0;
  double memory_bytes = 0;  // per GPU (the type's, unless the file overrides it)
  int island = 0;           // index into Cluster::islands()
};

struct Island {
  std::string name;
  std::vector<int> nodes;  // indices into Cluster::nodes()
};

// A link between the devices of two named nodes or islands (on different nodes),
// overriding the level's default. Naming one node twice overrides the link inside it
// (a PCIe-only node, say).
struct LinkOverride {
  std::string first;
  std::string second;
  Link link;
};

// One GPU: a process of the runtime, a row of the timeline.
struct Device {
  int id = 0;     // global index, node by node
  int node = 0;   // index into Cluster::nodes()
  int local = 0;  // index inside its node
};

class Cluster {
 public:
  Cluster(std::string name, std::vector<GpuType> gpu_types, std::vector<Node> nodes,
          std::vector<Island> islands, std::vector<Link> level_links,
          std::vector<LinkOverride> overrides);

  const std::string& name() const { return name_; }
  // Catalogue types plus those the cluster file added or overrode.
  const std::vector<GpuType>& gpu_types() const { return gpu_types_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Island>& islands() const { return islands_; }
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<LinkOverride>& overrides() const { return overrides_; }
  // The default link of each level, indexed by LinkLevel.
  const std::vector<Link>& level_links() const { return level_links_; }

  // The type of a name in gpu_types(); throws std::out_of_range for another name.
  const GpuType& gpu_type(const std::string& name) const;
  const GpuType& device_type(int device) const;
  double device_memory(int device) const;
  // Types that at least one node uses, in order of first appearance.
  std::vector<std::string> used_gpu_types() const;
  int count_devices_of_type(const std::string& type) const;

  LinkLevel level_between(int device_a, int device_b) const;
  // The default link of a level.
  const Link& level_link(LinkLevel level) const;
  // The link between two devices: an override naming their nodes or islands, otherwise
  // their level's link. Between a device and itself: infinite bandwidth, zero latency.
  Link link_between(int device_a, int device_b) const;
  // The slowest link of a ring through `devices` in the given order (what a ring
  // all-reduce is limited by).
  Link slowest_ring_link(const std::vector<int>& devices) const;

 private:
  bool names_match(const std::string& name, int node) const;

  std::string name_;
  std::vector<GpuType> gpu_types_;
  std::vector<Node> nodes_;
  std::vector<Island> islands_;
  std::vector<Link> level_links_;
  std::vector<LinkOverride> overrides_;
  std::vector<Device> devices_;
};

}  // namespace hyperpipe::cluster
