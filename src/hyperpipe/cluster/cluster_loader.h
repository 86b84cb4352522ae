// Clusters from hand-written YAML files (docs/formats.md) or the built-in examples.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/common/yaml_reader.h"

namespace hyperpipe::cluster {

// `name_or_path`: a cluster YAML file, or the name of a built-in example (the file names
// under examples/clusters/ without .yaml). Throws InputError on any problem.
Cluster load_cluster(const std::string& name_or_path);

Cluster read_cluster_yaml(const YamlField& root);

// The examples compiled into the binary: (name, YAML text).
const std::vector<std::pair<std::string, std::string>>& builtin_clusters();

}  // namespace hyperpipe::cluster
