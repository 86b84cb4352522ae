#include "hyperpipe/exporter/rank_placement.h"

#include <fmt/format.h>

#include <map>

namespace hyperpipe::exporter {

std::vector<PlacedRank> place_ranks(const plan::Plan& plan, const cluster::Cluster& cluster) {
  std::vector<PlacedRank> ranks;
  for (int device : plan::devices_in_rank_order(plan)) {
    const cluster::Device& d = cluster.devices().at(device);
    ranks.push_back(
        {static_cast<int>(ranks.size()), device, cluster.nodes()[d.node].name, d.local});
  }
  return ranks;
}

std::string rankfile(const std::vector<PlacedRank>& ranks) {
  std::string text;
  for (const auto& r : ranks) text += fmt::format("rank {}={} slot={}\n", r.rank, r.host, r.slot);
  return text;
}

std::optional<std::string> torchrun_lines(const std::vector<PlacedRank>& ranks) {
  // Each host's ranks, in rank order.
  std::map<std::string, std::vector<const PlacedRank*>> by_host;
  for (const auto& r : ranks) by_host[r.host].push_back(&r);
  const size_t per_host = by_host.begin()->second.size();
  std::map<int, std::string> lines;  // by node rank
  for (const auto& [host, placed] : by_host) {
    if (placed.size() != per_host) return std::nullopt;
    const int first = placed.front()->rank;
    if (first % static_cast<int>(per_host) != 0) return std::nullopt;
    std::vector<int> slots;
    for (size_t i = 0; i < placed.size(); ++i) {
      if (placed[i]->rank != first + static_cast<int>(i)) return std::nullopt;
      slots.push_back(placed[i]->slot);
    }
    const int node_rank = first / static_cast<int>(per_host);
    lines[node_rank] = fmt::format(
        "# on {}\nCUDA_VISIBLE_DEVICES={} torchrun --nnodes {} --nproc-per-node {} --node-rank {} "
        "--master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \"$@\"\n",
        host, fmt::join(slots, ","), by_host.size(), per_host, node_rank);
  }
  std::string text;
  for (const auto& [node_rank, line] : lines) text += line;
  return text;
}

}  // namespace hyperpipe::exporter
