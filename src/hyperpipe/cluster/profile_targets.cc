#include "hyperpipe/cluster/profile_targets.h"

#include <set>

#include "hyperpipe/common/error.h"

namespace hyperpipe::cluster {

std::vector<ProfileTarget> profile_targets(const Cluster* cluster,
                                           const std::string& cluster_source,
                                           const std::optional<std::string>& as) {
  std::vector<ProfileTarget> targets;
  if (cluster) {
    std::set<std::string> seen;
    for (int d = 0; d < static_cast<int>(cluster->devices().size()); ++d) {
      const auto& type = cluster->device_type(d);
      if (!seen.insert(type.name).second || !type.speed) continue;
      targets.push_back({type.name, 1.0 / *type.speed});
    }
    if (targets.empty()) {
      throw InputError(cluster_source, "gpu_types",
                       "a type with a `speed` (a CPU stand-in); profile real GPUs on the GPU "
                       "with --device cuda --as TYPE");
    }
  }
  if (as) targets.push_back({*as, 1.0});
  if (targets.empty()) targets.push_back({"host", 1.0});
  return targets;
}

}  // namespace hyperpipe::cluster
