// A plan written out in another framework's own terms: what a user pastes into
// Megatron-LM, DeepSpeed or torchtitan to run it, and where each rank goes (docs/
// formats.md, "Exported plans"). Each target's format names the release it was read from
// (plan/framework.cc).
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::exporter {

struct ExportedFile {
  std::string name;  // a file name, no directory
  std::string text;
};

// The files of one export: the target's own configuration, the rank placement (an Open
// MPI rankfile, and a torchrun line per host where torchrun can place the ranks).
std::vector<ExportedFile> export_plan(const plan::Plan& plan, const model::Model& model,
                                      const cluster::Cluster& cluster, plan::Framework target);

}  // namespace hyperpipe::exporter
