// The plan spaces published heterogeneity-aware planners search, reproduced on HyperPipe's
// cost model and simulator, so "how much better than X" is answered by one yardstick. Each
// is searched to its best (every micro-batch size, every layout the space allows, 1F1B as
// those systems run it, the least recomputation that fits per stage):
//   sailor  Sailor (Strati et al., SOSP'25, §4: one data-parallel degree for every stage,
//           tensor parallelism 1, 2 or 4, layers split as evenly as possible): any order of
//           any subset of device classes, each class it uses cut into as many stages of one
//           dp × tp shape as fit, dp the same across the pipeline, blocks split evenly.
//   metis   Metis (Um et al., USENIX ATC'24, §4–5: device groups per GPU type in an order of
//           GPU types fixed by memory, then layers split in proportion to the groups'
//           compute capability): every device used, classes ordered by memory (largest
//           first), each class cut into equal stages of one dp × tp shape, blocks in
//           proportion to each stage's peak FLOP/s.
//   amp     AMP (Li et al., NeurIPS'22, §3: a uniform device mesh per stage, layers cut by a
//           dynamic program over the stage costs): every device used, in the cluster file's
//           order, every stage the same dp × tp mesh, layers cut so the slowest stage's
//           compute is least.
// What HyperPipe searches beyond them: stages of different shapes inside one class, uneven
// dp across stages, any layer split, the schedules of plan_space.h, refinement on the
// simulator and pipelines side by side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

enum class PeerSpace { sailor, metis, amp };

std::string_view to_string(PeerSpace space);
std::vector<PeerSpace> peer_spaces();

// The fastest plan of the space that fits, or the fastest if none fits; nullopt when the
// space holds no plan for this cluster (e.g. no uniform mesh divides every class).
std::optional<ScoredPlan> best_of_peer_space(const cost::CostModel& costs,
                                             const BatchSettings& batch, PeerSpace space);

}  // namespace hyperpipe::planner
