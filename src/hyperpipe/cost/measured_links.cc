#include "hyperpipe/cost/measured_links.h"

namespace hyperpipe::cost {

cluster::Cluster with_measured_links(const cluster::Cluster& cluster, const ProfileDb* profiles) {
  const MeasuredLinks* measured = profiles ? profiles->links_for(cluster.name()) : nullptr;
  if (!measured) return cluster;
  constexpr size_t kLevels = 3;  // intra_node, intra_island, inter_island
  if (measured->levels.empty()) {
    return cluster::Cluster(cluster.name(), cluster.gpu_types(), cluster.nodes(), cluster.islands(),
                            std::vector<cluster::Link>(kLevels, measured->point_to_point), {});
  }
  // Measured across the hosts: those levels as measured, the rest (and the overrides) as
  // the file says.
  std::vector<cluster::Link> levels;
  for (const auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                           cluster::LinkLevel::inter_island}) {
    const auto found = measured->levels.find(level);
    levels.push_back(found != measured->levels.end() ? found->second : cluster.level_link(level));
  }
  return cluster::Cluster(cluster.name(), cluster.gpu_types(), cluster.nodes(), cluster.islands(),
                          std::move(levels), cluster.overrides());
}

}  // namespace hyperpipe::cost
