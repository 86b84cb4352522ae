#include "hyperpipe/cost/measured_links.h"

namespace hyperpipe::cost {

cluster::Cluster with_measured_links(const cluster::Cluster& cluster, const ProfileDb* profiles) {
  const MeasuredLinks* measured = profiles ? profiles->links_for(cluster.name()) : nullptr;
  if (!measured) return cluster;
  constexpr size_t kLevels = 3;  // intra_node, intra_island, inter_island
  return cluster::Cluster(cluster.name(), cluster.gpu_types(), cluster.nodes(), cluster.islands(),
                          std::vector<cluster::Link>(kLevels, measured->point_to_point), {});
}

}  // namespace hyperpipe::cost
