#include "netlab_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hyperpipe/common/error.h"

namespace hyperpipe::netlab {
namespace {

constexpr double kBitsPerByte = 8;
constexpr double kMicrosecondsPerSecond = 1e6;

LabShaping shaping_of(const cluster::Link& link) {
  return {link.bandwidth * kBitsPerByte, link.latency * kMicrosecondsPerSecond};
}

// A field of the script's line format: no blanks inside.
std::string one_word(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return std::isspace(c) != 0; }, '_');
  return text.empty() ? "_" : text;
}

void check_lab_id(const std::string& lab) {
  const bool valid =
      !lab.empty() && lab.size() <= 6 && std::all_of(lab.begin(), lab.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      });
  if (!valid)
    throw InputError("--lab", "the lab id", "1-6 characters of a-z and 0-9, got '" + lab + "'");
}

}  // namespace

LabLayout make_lab_layout(const cluster::Cluster& cluster, const plan::Plan* plan,
                          const std::string& lab) {
  check_lab_id(lab);
  const std::string prefix = "hp" + lab;
  for (const auto& override : cluster.overrides()) {
    if (override.first != override.second) {
      throw InputError(cluster.name(), "links.overrides",
                       fmt::format("only links inside one node (the lab shapes per level: one "
                                   "rate per host's veth, one per island's entry); '{}'-'{}' "
                                   "joins two",
                                   override.first, override.second));
    }
  }
  LabLayout layout;
  layout.lab = lab;
  layout.switch_netns = prefix + "-switch";
  const int island_count = std::max<int>(1, static_cast<int>(cluster.islands().size()));
  if (island_count > kMaxIslands) {
    throw InputError(
        cluster.name(), "islands",
        fmt::format("at most {} islands in the lab, got {}", kMaxIslands, island_count));
  }
  const bool crosses_islands = island_count > 1;
  for (int i = 0; i < island_count; ++i) {
    LabIsland island;
    island.name = cluster.islands().empty() ? "all" : one_word(cluster.islands()[i].name);
    island.bridge = fmt::format("{}b{}", prefix, i);
    island.gateway = fmt::format("{}.{}.{}.1", kFirstOctet, kSecondOctet, i);
    island.subnet = fmt::format("{}.{}.{}.0/24", kFirstOctet, kSecondOctet, i);
    if (crosses_islands) {
      island.entering = shaping_of(cluster.level_link(cluster::LinkLevel::inter_island));
    }
    layout.islands.push_back(island);
  }
  std::vector<int> hosts_in_island(island_count, 0);
  const bool crosses_nodes = cluster.nodes().size() > 1;
  for (size_t n = 0; n < cluster.nodes().size(); ++n) {
    const cluster::Node& node = cluster.nodes()[n];
    LabHost host;
    host.node = one_word(node.name);
    host.island = node.island;
    const int octet = kFirstHostOctet + hosts_in_island.at(node.island)++;
    if (octet > kMaxHostOctet) {
      throw InputError(cluster.name(), "nodes",
                       fmt::format("at most {} nodes per island in the lab",
                                   kMaxHostOctet - kFirstHostOctet + 1));
    }
    host.address = fmt::format("{}.{}.{}.{}", kFirstOctet, kSecondOctet, node.island, octet);
    host.netns = fmt::format("{}-h{}", prefix, n);
    host.host_veth = fmt::format("{}h{}", prefix, n);
    host.switch_veth = fmt::format("{}s{}", prefix, n);
    if (host.switch_veth.size() > kMaxInterfaceName) {
      throw InputError(cluster.name(), "nodes", "fewer nodes (the lab's interface names overflow)");
    }
    if (crosses_nodes) host.link = shaping_of(cluster.level_link(cluster::LinkLevel::intra_island));
    layout.hosts.push_back(host);
  }
  // Without a plan, one rank per device of the cluster in device order (as a run of
  // `profile --links` starts them).
  std::vector<int> devices;
  if (plan) {
    devices = plan::devices_in_rank_order(*plan);
  } else {
    for (int d = 0; d < static_cast<int>(cluster.devices().size()); ++d) devices.push_back(d);
  }
  {
    std::vector<int> ranks_on_host(layout.hosts.size(), 0);
    for (int device : devices) {
      if (device < 0 || device >= static_cast<int>(cluster.devices().size())) {
        throw InputError("plan", "stages.devices",
                         fmt::format("devices of cluster '{}' (0-{}), got {}", cluster.name(),
                                     cluster.devices().size() - 1, device));
      }
      const int node = cluster.devices()[device].node;
      layout.ranks.push_back({node, ranks_on_host[node]++});
    }
  }
  return layout;
}

std::string format_lab_layout(const LabLayout& layout) {
  const auto rate = [](const LabShaping& s) { return std::llround(s.rate_bits_per_second); };
  const auto delay = [](const LabShaping& s) { return std::llround(s.delay_microseconds); };
  std::string text = fmt::format("switch {}\n", layout.switch_netns);
  for (size_t i = 0; i < layout.islands.size(); ++i) {
    const LabIsland& island = layout.islands[i];
    text +=
        fmt::format("island {} {} {} {} {} {} {}\n", i, island.name, island.bridge, island.gateway,
                    island.subnet, rate(island.entering), delay(island.entering));
  }
  for (size_t h = 0; h < layout.hosts.size(); ++h) {
    const LabHost& host = layout.hosts[h];
    text += fmt::format("host {} {} {} {} {} {} {} {} {}\n", h, host.node, host.island, host.netns,
                        host.address, host.host_veth, host.switch_veth, rate(host.link),
                        delay(host.link));
  }
  for (size_t r = 0; r < layout.ranks.size(); ++r) {
    text += fmt::format("rank {} {} {}\n", r, layout.ranks[r].host, layout.ranks[r].local_rank);
  }
  return text;
}

}  // namespace hyperpipe::netlab
