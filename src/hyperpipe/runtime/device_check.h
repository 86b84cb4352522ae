// Each process checks that it runs where the plan put it, before any step: its CUDA device
// is of the GPU type its stage was planned for, and the processes of one node of the
// cluster file run on one host. A launcher that placed ranks on the wrong nodes is named
// here, with the rank, instead of showing as a slow or out-of-memory run.
#pragma once

#include <torch/torch.h>

#include <string>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/plan/rank_layout.h"
#include "hyperpipe/runtime/communicator.h"

namespace hyperpipe::runtime {

// On a CUDA device: InputError (naming `plan_path`) where the device is not of the type
// the plan's device `planned_device` has in `cluster`. A CPU process stands in for any
// type and passes.
void require_planned_device(const torch::Device& device, const cluster::Cluster& cluster,
                            int planned_device, int rank, const std::string& plan_path);

// After the processes have met: InputError where two processes whose devices share a node
// of the cluster file run on different hosts (every process reaches the same verdict).
void require_one_host_per_node(Communicator& communicator, const plan::RankLayout& layout,
                               const cluster::Cluster& cluster, const std::string& plan_path);

}  // namespace hyperpipe::runtime
