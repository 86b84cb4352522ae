// The iteration's end as ops: after (or, overlapped, beside) the backward work each rank
// sums its gradients over its data-parallel group chunk by chunk (AR: one bucket per
// chunk, which is ready when the chunk's last weight gradient is), across the plan's
// pipelines (RS), the tied embedding between the first and last stage (TE), the global
// norm over every rank (GN), then steps the optimizer (OPT). The simulator and the runtime
// run these ops as they run F and B, so both end the iteration the same way.
#pragma once

#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::schedule {

struct EpilogueOptions {
  // Each chunk's all-reduce right after its last weight gradient (and the sends that follow
  // it), beside the backward work left, as DDP and Megatron-LM overlap their buckets;
  // otherwise all of them after the rank's last op, in the order their chunks finished.
  bool overlap_allreduce = false;
  bool tied_embeddings = false;  // the first stage's embedding is the last stage's head
  bool replicas = false;         // the plan has pipelines side by side
};

// Appends the epilogue to a schedule (with or without its communication).
// Taken by value: a schedule passed as a temporary is reused, not copied.
Schedule add_epilogue(Schedule schedule, const EpilogueOptions& options);

// The pipeline ranks that run a group collective (RS, TE, GN) of this schedule together:
// TE the ranks of the first and the last stage, RS and GN every rank.
std::vector<int> collective_ranks(const Schedule& schedule, OpKind kind);

}  // namespace hyperpipe::schedule
