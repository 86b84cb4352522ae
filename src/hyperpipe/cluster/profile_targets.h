// The GPU types a profile measured on this host is filed under (`hyperpipe profile`): the
// CPU stand-ins of an emulated cluster, each measured as it runs, or the type the measuring
// device is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"

namespace hyperpipe::cluster {

struct ProfileTarget {
  std::string type;
  double factor = 1;  // the times measured here, scaled by 1 / the type's stand-in speed
};

// The stand-in types of `cluster` (those with a `speed`, once each in device order), then
// `as` (factor 1); "host" alone when there is neither. Throws InputError (naming
// `cluster_source`) for a cluster with no stand-in: its real GPUs are profiled on the GPU.
std::vector<ProfileTarget> profile_targets(const Cluster* cluster,
                                           const std::string& cluster_source,
                                           const std::optional<std::string>& as);

}  // namespace hyperpipe::cluster
