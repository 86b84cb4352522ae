// Where each rank of an exported plan runs. Megatron-LM (tp fastest, then dp, then pp:
// parallel_state's default order "tp-cp-ep-dp-pp"), DeepSpeed (PipeModelDataParallel
// topology: pipe, data, model) and torchtitan (mesh pp, dp, tp) number their ranks alike:
// rank = stage · (dp · tp) + dp index · tp + tp index, which is the order of a stage's
// devices in the plan (plan::index_in_group; place_ranks follows devices_in_rank_order).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::exporter {

struct PlacedRank {
  int rank = 0;
  int device = 0;    // global device id of the cluster
  std::string host;  // the cluster node's name
  int slot = 0;      // the GPU's index in its node
};

// One rank per device of the plan's pipeline ranks (an interleaved plan's later chunks run
// on the first chunk's devices). The plan must have one dp and one tp on every stage.
std::vector<PlacedRank> place_ranks(const plan::Plan& plan, const cluster::Cluster& cluster);

// Open MPI's rankfile: "rank R=HOST slot=GPU" per rank (mpirun --rankfile).
std::string rankfile(const std::vector<PlacedRank>& ranks);

// torchrun numbers a host's ranks node_rank · nproc_per_node + local_rank: one command per
// host (its --node-rank and the CUDA_VISIBLE_DEVICES order that puts each local rank on
// its GPU) where every host holds a block of consecutive ranks of one size; nullopt
// otherwise (then only the rankfile places them).
std::optional<std::string> torchrun_lines(const std::vector<PlacedRank>& ranks);

}  // namespace hyperpipe::exporter
