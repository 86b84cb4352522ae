// A cluster as the cost model should see it once links were measured for it: every
// level's link replaced by the measured point-to-point figures (the processes of an
// emulated cluster all meet on this host, so each level is the same local transport).
#pragma once

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/profile_db.h"

namespace hyperpipe::cost {

// `cluster` itself where `profiles` is null or holds no links for it.
cluster::Cluster with_measured_links(const cluster::Cluster& cluster, const ProfileDb* profiles);

}  // namespace hyperpipe::cost
