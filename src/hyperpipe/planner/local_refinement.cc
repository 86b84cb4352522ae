#include "hyperpipe/planner/local_refinement.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "hyperpipe/cost/device_group.h"
#include "hyperpipe/planner/stage_oracle.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {

std::optional<model::Recompute> least_recompute(const cost::CostModel& costs,
                                                const plan::Plan& plan, int s) {
  const auto& stage = plan.stages[s];
  const auto group = cost::make_device_group(costs.cluster(), stage.devices, stage.dp, stage.tp);
  const int64_t seq = costs.model().config().sequence_length(plan.seq_len);
  const int in_flight =
      schedule::one_f_one_b_in_flight(static_cast<int>(plan.stages.size()) - s, plan.micro_batches);
  for (model::Recompute recompute : kRecomputeOptions) {
    const auto memory = costs.stage_memory(stage.first_layer, stage.end_layer, group,
                                           plan.micro_batch_size, seq, in_flight, recompute);
    if (memory.total() <= group.memory_bytes) return recompute;
  }
  return std::nullopt;
}

namespace {

// Whether stage s's devices can run as dp × tp with this tp: tp a power of two dividing
// them, the node's GPUs and the model's divisor, dp at most the micro-batch.
bool valid_split(const cost::CostModel& costs, const plan::Plan& plan, int s, int tp,
                 const PlanSpace& space) {
  const auto& stage = plan.stages[s];
  const auto& cluster = costs.cluster();
  const int size = static_cast<int>(stage.devices.size());
  const int node_gpus = cluster.nodes()[cluster.devices()[stage.devices.front()].node].gpu_count;
  const int64_t divisor = costs.model().config().tensor_parallel_divisor();
  return tp <= space.max_tp && size % tp == 0 && node_gpus % tp == 0 && divisor % tp == 0 &&
         size / tp <= plan.micro_batch_size;
}

// Tensor-parallel degrees worth trying: powers of two up to the widest stage.
std::vector<int> tp_degrees(const plan::Plan& plan) {
  size_t widest = 1;
  for (const auto& stage : plan.stages) widest = std::max(widest, stage.devices.size());
  std::vector<int> degrees;
  for (int tp = 1; static_cast<size_t>(tp) <= widest; tp *= 2) degrees.push_back(tp);
  return degrees;
}

// The next smaller and the next larger micro-batch size that divide the pipeline's samples.
std::vector<int64_t> neighbour_sizes(const plan::Plan& plan) {
  const auto sizes = micro_batch_sizes(plan.samples());
  const auto at = std::find(sizes.begin(), sizes.end(), plan.micro_batch_size);
  std::vector<int64_t> neighbours;
  if (at == sizes.end()) return neighbours;
  if (at != sizes.begin()) neighbours.push_back(*(at - 1));
  if (at + 1 != sizes.end()) neighbours.push_back(*(at + 1));
  return neighbours;
}

void set_split(plan::StagePlan& stage, int tp) {
  stage.tp = tp;
  stage.dp = static_cast<int>(stage.devices.size()) / tp;
}

class Refinement {
 public:
  Refinement(const cost::CostModel& costs, const PlanSpace& space, ScoredPlan& current)
      : costs_(costs), space_(space), current_(current) {}

  // The best improving move, if any. Device groups are ranks: with interleaved chunks, group r
  // holds stages r, r + R, …, and a move on a group applies to each of its chunks.
  bool step() {
    const plan::Plan& plan = current_.plan;
    const int stages = static_cast<int>(plan.stages.size());
    const int ranks = plan.ranks();
    std::vector<int> all(static_cast<size_t>(stages));
    for (int s = 0; s < stages; ++s) all[s] = s;
    const auto chunks_of = [&](int r) {
      std::vector<int> members;
      for (int s = r; s < stages; s += ranks) members.push_back(s);
      return members;
    };
    // One group's devices split anew (a tp that differs from its neighbours' changes how
    // activations and the tied embedding's sum travel), then every group to one tp.
    for (int tp : tp_degrees(plan)) {
      for (int r = 0; r < ranks; ++r) {
        if (tp == plan.stages[r].tp || !valid_split(costs_, plan, r, tp, space_)) continue;
        plan::Plan moved = plan;
        for (int s : chunks_of(r)) set_split(moved.stages[s], tp);
        try_move(std::move(moved), chunks_of(r));
      }
      plan::Plan moved = plan;
      bool valid = true, changed = false;
      for (int s = 0; s < stages && valid; ++s) {
        valid = valid_split(costs_, plan, s, tp, space_);
        changed = changed || plan.stages[s].tp != tp;
        set_split(moved.stages[s], tp);
      }
      if (valid && changed) try_move(std::move(moved), all);
    }
    // Two neighbouring groups trade devices (the larger group to the other's layers).
    for (int r = 0; r + 1 < ranks; ++r) {
      if (plan.stages[r].devices.size() == plan.stages[r + 1].devices.size()) continue;
      plan::Plan moved = plan;
      for (int s = r; s + 1 < stages; s += ranks) {
        std::swap(moved.stages[s].devices, moved.stages[s + 1].devices);
        std::swap(moved.stages[s].dp, moved.stages[s + 1].dp);
        std::swap(moved.stages[s].tp, moved.stages[s + 1].tp);
      }
      auto touched = chunks_of(r);
      for (int s : chunks_of(r + 1)) touched.push_back(s);
      try_move(std::move(moved), touched);
    }
    for (int64_t size : space_.micro_batch ? std::vector<int64_t>{} : neighbour_sizes(plan)) {
      plan::Plan moved = plan;
      moved.micro_batch_size = size;
      moved.micro_batches = static_cast<int>(plan.samples() / size);
      bool valid = true;
      for (const auto& stage : moved.stages) valid = valid && stage.dp <= size;
      if (valid) try_move(std::move(moved), all);
    }
    // A layer across the boundary between neighbouring stages of the chain.
    for (int s = 0; s + 1 < stages; ++s) {
      for (int shift : {-1, 1}) {
        plan::Plan moved = plan;
        moved.stages[s].end_layer += shift;
        moved.stages[s + 1].first_layer += shift;
        if (moved.stages[s].end_layer <= moved.stages[s].first_layer ||
            moved.stages[s + 1].end_layer <= moved.stages[s + 1].first_layer) {
          continue;
        }
        try_move(std::move(moved), {s, s + 1});
      }
    }
    return commit();
  }

  // The best improving merge, if any: two neighbouring groups of one GPU type as one,
  // holding both their layers (fewer, larger stages wait on fewer round trips over a slow
  // link, which the stage search's objective does not see). Not interleaved plans: their
  // chunks would have to be cut anew.
  bool merge_step() {
    const plan::Plan& plan = current_.plan;
    const int ranks = plan.ranks();
    for (int r = 0; plan.chunks == 1 && r + 1 < ranks; ++r) {
      const auto& cluster = costs_.cluster();
      if (cluster.device_type(plan.stages[r].devices.front()).name !=
          cluster.device_type(plan.stages[r + 1].devices.front()).name) {
        continue;
      }
      std::vector<int> tps{plan.stages[r].tp};
      if (plan.stages[r + 1].tp != tps.front()) tps.push_back(plan.stages[r + 1].tp);
      for (int tp : tps) {
        plan::Plan moved = plan;
        auto& merged = moved.stages[r];
        const auto& next = plan.stages[r + 1];
        merged.devices.insert(merged.devices.end(), next.devices.begin(), next.devices.end());
        merged.end_layer = next.end_layer;
        moved.stages.erase(moved.stages.begin() + r + 1);
        if (!moved.warmup.empty()) moved.warmup.erase(moved.warmup.begin() + r + 1);
        if (!valid_split(costs_, moved, r, tp, space_)) continue;
        set_split(merged, tp);
        try_move(std::move(moved), {r});
      }
    }
    return commit();
  }

 private:
  // Queues a neighbour, with the recomputation it needs, for commit() to simulate.
  void try_move(plan::Plan moved, const std::vector<int>& touched) {
    if (!within(moved, space_)) return;
    for (int s : touched) {
      // A recomputation the user fixed stays; a plan it does not fit is pruned below.
      const auto recompute =
          space_.recompute ? space_.recompute : least_recompute(costs_, moved, s);
      if (!recompute) return;
      moved.stages[s].recompute = *recompute;
    }
    const double bound = iteration_lower_bound(costs_, moved);
    if (bound >= current_.iteration_time()) return;
    neighbours_.push_back({std::move(moved), bound, neighbours_.size()});
  }

  // Simulates the queued neighbours, lowest lower bound first, and moves to the fastest
  // that fits, if it beats the current plan. One whose bound (iteration_lower_bound)
  // reaches the fastest so far cannot beat it, and in this order neither can any after it;
  // one that cannot fit is not simulated. Of equally fast neighbours, the one queued first.
  bool commit() {
    std::stable_sort(neighbours_.begin(), neighbours_.end(),
                     [](const Neighbour& a, const Neighbour& b) { return a.bound < b.bound; });
    std::optional<ScoredPlan> best;
    size_t best_index = 0;
    for (size_t n = 0; n < neighbours_.size(); ++n) {
      auto& [moved, bound, queued] = neighbours_[n];
      const double to_beat = best ? best->iteration_time() : current_.iteration_time();
      if (bound > to_beat || (bound == to_beat && !best)) break;
      if (cannot_fit(costs_, moved)) continue;
      ScoredPlan scored = score_plan(costs_, std::move(moved), current_.label);
      if (!scored.fits || scored.iteration_time() > to_beat) continue;
      const bool faster = scored.iteration_time() < to_beat;
      if (!faster && (!best || queued > best_index)) continue;
      scored.estimate = current_.estimate;
      best = std::move(scored);
      best_index = queued;
    }
    neighbours_.clear();
    if (!best) return false;
    current_ = std::move(*best);
    return true;
  }

  struct Neighbour {
    plan::Plan plan;
    double bound = 0;
    size_t queued = 0;  // the order try_move met it in
  };
  const cost::CostModel& costs_;
  const PlanSpace& space_;
  ScoredPlan& current_;
  std::vector<Neighbour> neighbours_;  // this step's, queued by try_move
};

}  // namespace

ScoredPlan refine(const cost::CostModel& costs, ScoredPlan start, const PlanSpace& space,
                  bool merges) {
  if (start.plan.pipeline_count() != 1 || !start.fits) return start;
  Refinement refinement(costs, space, start);
  int moves = 0;
  while (moves < kMaxRefinementMoves && refinement.step()) ++moves;
  // Merges only from where the other moves end, each followed by those again: a merge taken
  // as soon as it is the best move can lead to a slower end than without it.
  while (merges && moves < kMaxRefinementMoves && refinement.merge_step()) {
    ++moves;
    while (moves < kMaxRefinementMoves && refinement.step()) ++moves;
  }
  return start;
}

}  // namespace hyperpipe::planner
