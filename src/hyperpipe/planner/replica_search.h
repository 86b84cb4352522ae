// Outer data parallelism over pipelines of different composition: the cluster's device
// classes split into groups, each group one pipeline of the whole model, each pipeline
// a share of the global batch in proportion to its speed, gradients summed across them.
// Identical replicas are not searched here: the stage search covers them as stages with
// a larger dp.
#pragma once

#include <cstdint>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/planner/plan_space.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

// Clusters of at most this many device classes and GPUs try every split of their classes
// into two or more pipelines (Bell(4) − 1 = 14 splits); larger ones try one pipeline per
// island and one per GPU type, the splits along which speed and links differ most (each
// split costs a few searches over its groups, which grow with the GPUs).
inline constexpr int kEverySplitUpToClasses = 4;
inline constexpr int kEverySplitUpToGpus = 64;
// Shares are whole granules of the global batch, and each pipeline gets at least this
// many of them, so a share can still be cut into micro-batches of a few sizes.
inline constexpr int64_t kGranulesPerPipeline = 4;
// After the speed-proportional first guess, at most this many moves of one granule from
// the pipeline that finishes last to the one that finishes first.
inline constexpr int kShareMoves = 6;

// The splits of classes 0 … n − 1 tried: every set partition into two or more groups
// when n ≤ kEverySplitUpToClasses and the classes hold at most kEverySplitUpToGpus GPUs;
// else by island and by GPU type where those give two or more groups. Each group lists
// class indices in increasing order.
std::vector<std::vector<std::vector<int>>> class_splits(const std::vector<DeviceClass>& classes);

// Shares of `global_batch` in whole granules, in proportion to `rates` (sequences per
// second), each at least one granule; empty when the batch has fewer granules than rates.
std::vector<int64_t> proportional_shares(const std::vector<double>& rates, int64_t global_batch,
                                         int64_t granule);

// The granule for `pipelines` pipelines: the largest power of two dividing the batch
// that leaves kGranulesPerPipeline granules per pipeline (1 when none does).
int64_t share_granule(int64_t global_batch, int pipelines);

struct ReplicaOptions {
  BatchSettings batch;  // micro_batch_sizes is ignored: each share has its own
  PlanSpace space;
};

// The best plan of several pipelines for each split that has one, scored by the
// simulator: shares settled under 1F1B, then the best schedule of each pipeline
// (best_schedule); fastest first.
std::vector<ScoredPlan> search_replicas(const cost::CostModel& costs,
                                        const std::vector<DeviceClass>& classes,
                                        const ReplicaOptions& options);

}  // namespace hyperpipe::planner
