#include "hyperpipe/planner/score_memo.h"

#include <functional>

#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {
namespace {

thread_local ScoreMemo* innermost = nullptr;

// Boost's hash_combine: a value mixed into the seed.
template <typename T>
void combine(size_t& seed, const T& value) {
  seed ^= std::hash<T>{}(value) + 0x9e3779b9 + (seed << 6) + (seed >> 2);
}

void hash_pipeline(size_t& seed, const plan::Pipeline& pipeline) {
  combine(seed, pipeline.micro_batch_size);
  combine(seed, pipeline.micro_batches);
  combine(seed, static_cast<int>(pipeline.schedule));
  combine(seed, pipeline.chunks);
  for (int depth : pipeline.warmup) combine(seed, depth);
  for (const auto& stage : pipeline.stages) {
    combine(seed, stage.first_layer);
    combine(seed, stage.end_layer);
    combine(seed, stage.dp);
    combine(seed, stage.tp);
    combine(seed, static_cast<int>(stage.recompute));
    for (int device : stage.devices) combine(seed, device);
  }
}

}  // namespace

size_t plan_hash(const plan::Plan& plan) {
  size_t seed = 0;
  hash_pipeline(seed, plan);
  for (const auto& replica : plan.replicas) hash_pipeline(seed, replica);
  combine(seed, plan.seq_len);
  combine(seed, plan.overlap_allreduce);
  combine(seed, plan.sequence_parallel);
  combine(seed, plan.shard_optimizer);
  combine(seed, static_cast<int>(plan.runtime));
  combine(seed, static_cast<int>(plan.gradient_reduce_dtype));
  return seed;
}

ScoreMemo::ScoreMemo(const cost::CostModel& costs) : costs_(costs), outer_(innermost) {
  innermost = this;
}

ScoreMemo::~ScoreMemo() {
  innermost = outer_;
}

ScoreMemo* ScoreMemo::active(const cost::CostModel& costs) {
  return innermost && &innermost->costs_ == &costs ? innermost : nullptr;
}

const ScoredPlan* ScoreMemo::find(const plan::Plan& plan) const {
  const auto bucket = plans_.find(plan_hash(plan));
  if (bucket == plans_.end()) return nullptr;
  for (const auto& scored : bucket->second) {
    if (scored.plan == plan) return &scored;
  }
  return nullptr;
}

void ScoreMemo::remember(const ScoredPlan& scored) {
  plans_[plan_hash(scored.plan)].push_back(scored);
}

}  // namespace hyperpipe::planner
