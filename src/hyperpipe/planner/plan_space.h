// The plan space the planner searches, in one place, and the limits a user may put on it.
// A plan of this space is one pipeline (replica_search.h adds pipelines side by side):
//   * micro-batch size b: any divisor of the global batch B leaving at most
//     kMaxMicroBatches micro-batches (micro_batch_sizes);
//   * an order of device classes (device_class.h: one GPU type in one island), any order of
//     any non-empty subset, each class holding one or more consecutive stages;
//   * each stage a contiguous layer range on a device group of its class in one of the
//     class's shapes (class_shapes: dp × tp, dp at most b), the groups packing into the
//     class's nodes (assign_devices), at most max_stages stages;
//   * each stage the least recomputation that fits its memory with the micro-batches 1F1B
//     keeps in flight there;
//   * a schedule (schedule_variants): 1F1B, GPipe, ZB-H1, the heterogeneity-aware 1F1B
//     with link-aware warm-up depths, interleaved 1F1B with each group's layers cut evenly
//     into kInterleaveChunks chunks; the gradient all-reduce overlapped or not.
// exhaustive_search.h enumerates exactly this space; it is the definition the planner's
// search is judged against.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/plan/plan.h"
#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::planner {

// What a user may rule out, because the framework that will run the plan cannot express it.
struct PlanSpace {
  int max_stages = 32;
  int max_tp = std::numeric_limits<int>::max();
  // Every stage the same data-parallel degree (Megatron-LM and DeepSpeed require it).
  bool same_dp = false;
  // Every stage the same tensor-parallel degree (as same_dp).
  bool same_tp = false;
  // One micro-batch size (0: every size of micro_batch_sizes); one pipeline then.
  int64_t micro_batch = 0;
  // The shape a user already runs, fixed (0 or unset: searched). Each fixes one pipeline:
  // every stage this data- and tensor-parallel degree, exactly this many device groups
  // (Megatron-LM's pipeline-parallel size), every stage this recomputation.
  int dp = 0;
  int tp = 0;
  int stages = 0;
  std::optional<model::Recompute> recompute = std::nullopt;
  // The schedule kinds a plan may use; empty: every kind.
  std::vector<schedule::ScheduleKind> schedules;

  bool allows(schedule::ScheduleKind kind) const;
  // "1f1b,zb-h1", or "every kind".
  std::string schedules_text() const;
  // The limits set, as flags ("--max-stages 2, --same-dp"); empty when none is.
  std::string limits_text() const;
  // Whether some choice fixes the plan to one pipeline (no pipelines side by side).
  bool one_pipeline() const;
};

// Whether a plan lies within the space's limits: at most max_stages device groups and tp at
// most max_tp in every pipeline, allowed schedule kinds, with same_dp one pipeline whose
// stages share one dp, with micro_batch one pipeline of that micro-batch size, and every
// fixed choice (dp, tp, stages, recompute) as fixed.
bool within(const plan::Plan& plan, const PlanSpace& space);

// Every micro-batch size of the space: the divisors of `global_batch` that leave at most
// kMaxMicroBatches micro-batches, smallest first.
std::vector<int64_t> micro_batch_sizes(int64_t global_batch);

}  // namespace hyperpipe::planner
