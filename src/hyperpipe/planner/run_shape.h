// A run described the way Megatron-LM's command line describes it (tensor, pipeline and
// data parallel sizes, a micro-batch per data-parallel rank, the global batch), as a plan
// the simulator runs: what a user already runs, to set beside what the planner finds.
#pragma once

#include <cstdint>
#include <string>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::planner {

struct RunShape {
  int tp = 1;  // --tensor-model-parallel-size
  int pp = 1;  // --pipeline-model-parallel-size
  int dp = 1;  // the data-parallel size: world size / (tp · pp)
  // Sequences per data-parallel rank per micro-batch (--micro-batch-size).
  int64_t micro_batch = 1;
  int64_t global_batch = 1;  // --global-batch-size
  int64_t seq_len = 0;       // --seq-length (0: the model's)
  // Model chunks per pipeline rank (--num-virtual-stages-per-pipeline-rank): interleaved
  // 1F1B when more than one.
  int virtual_stages = 1;
  model::Recompute recompute = model::Recompute::none;  // --recompute-granularity
  bool sequence_parallel = false;                       // --sequence-parallel
  bool shard_optimizer = false;                         // --use-distributed-optimizer
  plan::Framework runtime = plan::Framework::megatron;
};

// Megatron-LM's data-parallel size on a cluster of `devices` GPUs: `dp` where given (0:
// not), else the world size over tp × pp, which must divide it. Throws InputError (naming
// --tp and --pp) where it does not.
int data_parallel_size(int devices, int tp, int pp, int dp);

// The run as a plan: ranks numbered as Megatron-LM numbers them (tensor-parallel ranks
// adjacent, then data-parallel, then pipeline stages), rank r on the cluster's device r;
// decoder blocks split evenly over the pp · virtual_stages model chunks (uniform_split:
// the embedding with the first, the head with the last); 1F1B, or interleaved 1F1B with
// virtual stages. `model_ref` and `cluster_ref` are written into the plan. Throws
// InputError naming the flag at fault: a batch that does not divide into micro-batches
// of micro_batch × dp, more ranks than the cluster has devices, more model chunks than
// blocks, a group of one stage on GPUs of different types.
plan::Plan plan_of_run(const RunShape& run, const cost::CostModel& costs,
                       const std::string& model_ref, const std::string& cluster_ref);

}  // namespace hyperpipe::planner
