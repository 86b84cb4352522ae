// A run described as Megatron-LM's command line describes it (`simulate --tp … --pp …`),
// loaded and made the plan it is, in place of a plan file.
#pragma once

#include <optional>
#include <string>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/run_shape.h"

namespace hyperpipe::planner {

struct RunDescription {
  // dp 0 (as here): the cluster's GPUs over tp × pp (data_parallel_size).
  RunShape shape{.dp = 0};
  std::string model;                  // catalogue name or file
  std::string cluster;                // catalogue name or file
  std::optional<model::DType> dtype;  // unset: the model's
};

struct DescribedRun {
  plan::Plan plan;  // names its model and cluster files by absolute path (catalogue names as given)
  model::Model model;  // in the run's dtype
  cluster::Cluster cluster;
  RunShape shape;  // with its data-parallel size
};

// Throws InputError naming the flag at fault (plan_of_run), or the file that is wrong.
DescribedRun plan_described_run(const RunDescription& description);

}  // namespace hyperpipe::planner
