// The network lab's layout: how a cluster file becomes Linux network namespaces on one
// machine (scripts/netlab.sh builds it). Each node is a namespace (a "host") whose devices
// are processes talking over its own loopback (intra-node: unshaped); each host has one
// veth into its island's bridge, shaped both ways to the intra-island link; the bridges
// live in one switch namespace that routes between islands, each bridge's own egress
// shaped to the inter-island link (so traffic entering an island from another crosses it).
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::netlab {

// The private range the lab addresses hosts from: 10.213.<island>.<host>/24, used only
// inside the namespaces the lab creates (RFC 1918; the second octet picked to be unlikely
// on a developer's own network, and it never leaves the lab either way).
inline constexpr int kFirstOctet = 10;
inline constexpr int kSecondOctet = 213;
// Host addresses in an island start here (.1 is the island's gateway in the switch).
inline constexpr int kFirstHostOctet = 10;
inline constexpr int kMaxHostOctet = 254;
inline constexpr int kMaxIslands = 255;
// Linux interface names hold at most 15 characters (IFNAMSIZ - 1).
inline constexpr size_t kMaxInterfaceName = 15;

struct LabShaping {
  double rate_bits_per_second = 0;
  double delay_microseconds = 0;
};

struct LabIsland {
  std::string name;
  std::string bridge;  // in the switch namespace
  std::string gateway;
  std::string subnet;   // a.b.c.0/24
  LabShaping entering;  // traffic from other islands, at the bridge's egress
};

struct LabHost {
  std::string node;  // the cluster's node name
  int island = 0;
  std::string netns;        // its namespace
  std::string address;      // of host_veth
  std::string host_veth;    // inside netns
  std::string switch_veth;  // its peer, a port of the island's bridge
  LabShaping link;          // each way, at both ends of the veth
};

struct LabRank {
  int host = 0;        // index into LabLayout::hosts
  int local_rank = 0;  // among the ranks of its host
};

struct LabLayout {
  std::string lab;  // the lab's id: every name it creates starts with "hp<lab>"
  std::string switch_netns;
  std::vector<LabIsland> islands;
  std::vector<LabHost> hosts;
  std::vector<LabRank> ranks;  // rank by rank: the plan's, or else one per device
};

// The layout of `cluster`, names made from `lab` (1-6 characters of [a-z0-9]), and where
// each rank runs: the plan's ranks, or without a plan one rank per device in order. Throws
// InputError (source: the cluster's name) for what the lab cannot shape: link overrides between
// nodes or islands, more islands or hosts than the address range holds.
LabLayout make_lab_layout(const cluster::Cluster& cluster, const plan::Plan* plan,
                          const std::string& lab);

// One line per item, fields separated by single spaces, for the shell script to read:
//   switch <netns>
//   island <index> <name> <bridge> <gateway> <subnet> <rate bit/s> <delay us>
//   host <index> <node> <island> <netns> <address> <host veth> <switch veth> <rate> <delay>
//   rank <rank> <host> <local rank>
std::string format_lab_layout(const LabLayout& layout);

}  // namespace hyperpipe::netlab
