#include "hyperpipe/planner/peer_spaces.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/cost_oracle.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/planner/layer_split.h"
#include "hyperpipe/planner/local_refinement.h"

namespace hyperpipe::planner {
namespace {

constexpr const char* kNames[] = {"sailor", "metis", "amp"};
// Sailor's tensor-parallel degrees (Strati et al., SOSP'25, §4).
constexpr int kSailorMaxTp = 4;

// One class's part of a pipeline: `stages` stages, each a group of shape `shape`.
struct ClassChoice {
  int cls = 0;
  int shape = 0;
  int stages = 0;
};

// The layer cut that makes the slowest stage's compute least (AMP's partition), each stage
// at least one layer: a dynamic program over (stages, layers).
std::vector<int> min_max_split(const CostOracle& oracle, const std::vector<StageChoice>& stages) {
  const int layers = oracle.num_layers();
  const int count = static_cast<int>(stages.size());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(count + 1, std::vector<double>(layers + 1, inf));
  std::vector<std::vector<int>> cut(count + 1, std::vector<int>(layers + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= count; ++s) {
    const auto& stage = stages[s - 1];
    for (int end = s; end <= layers; ++end) {
      for (int first = s - 1; first < end; ++first) {
        const double time =
            oracle.stage_time(stage.cls, stage.shape, first, end, model::Recompute::none);
        const double worst = std::max(best[s - 1][first], time);
        if (worst < best[s][end]) {
          best[s][end] = worst;
          cut[s][end] = first;
        }
      }
    }
  }
  std::vector<int> ends(count);
  for (int s = count, end = layers; s >= 1; end = cut[s][end], --s) ends[s - 1] = end;
  return ends;
}

class PeerSearch {
 public:
  PeerSearch(const cost::CostModel& costs, const BatchSettings& batch, PeerSpace space)
      : costs_(costs), batch_(batch), space_(space), classes_(device_classes(costs.cluster())) {}

  std::optional<ScoredPlan> run() {
    const int64_t seq = costs_.model().config().sequence_length(batch_.seq_len);
    for (int64_t b : batch_.micro_batch_sizes) {
      const CostOracle oracle(
          costs_, classes_, b, seq,
          space_ == PeerSpace::sailor ? kSailorMaxTp : std::numeric_limits<int>::max());
      oracle_ = &oracle;
      micro_batch_ = b;
      for (const auto& order : orders()) {
        order_ = order;
        std::vector<ClassChoice> chosen;
        choose(0, chosen);
      }
    }
    return std::move(best_);
  }

 private:
  std::vector<std::vector<int>> orders() const {
    std::vector<int> all(classes_.size());
    std::iota(all.begin(), all.end(), 0);
    if (space_ == PeerSpace::metis) {
      // GPU types by memory, largest first (Metis's fixed order).
      std::stable_sort(all.begin(), all.end(), [&](int a, int b) {
        return costs_.cluster().device_memory(classes_[a].devices.front()) >
               costs_.cluster().device_memory(classes_[b].devices.front());
      });
    }
    if (space_ != PeerSpace::sailor) return {all};
    return every_class_order(all);
  }

  // The choices of class order_[k], given those before it.
  void choose(size_t k, std::vector<ClassChoice>& chosen) {
    if (k == order_.size()) {
      evaluate(chosen);
      return;
    }
    const int cls = order_[k];
    const auto& shapes = oracle_->shapes(cls);
    for (int g = 0; g < static_cast<int>(shapes.size()); ++g) {
      const Shape& shape = shapes[g];
      const int size = classes_[cls].count();
      if (!chosen.empty()) {
        const Shape& first = oracle_->shapes(chosen.front().cls)[chosen.front().shape];
        if (space_ == PeerSpace::sailor && shape.dp != first.dp) continue;
        if (space_ == PeerSpace::amp && !(shape == first)) continue;
      }
      // Metis and AMP use every device; Sailor as many groups as the class holds.
      if (space_ != PeerSpace::sailor && size % shape.size() != 0) continue;
      chosen.push_back({cls, g, size / shape.size()});
      choose(k + 1, chosen);
      chosen.pop_back();
    }
  }

  void evaluate(const std::vector<ClassChoice>& chosen) {
    const int layers = oracle_->num_layers();
    std::vector<StageChoice> stages;
    for (const auto& choice : chosen) {
      for (int i = 0; i < choice.stages; ++i) stages.push_back({choice.cls, choice.shape});
    }
    const int count = static_cast<int>(stages.size());
    if (count > layers - 2) return;  // each stage at least one block
    std::vector<int> ends;
    switch (space_) {
      case PeerSpace::sailor:
        ends = uniform_split(layers, count);
        break;
      case PeerSpace::metis: {
        std::vector<double> shares;
        const auto& config = costs_.model().config();
        for (const auto& stage : stages) {
          const auto& cls = classes_[stage.cls];
          shares.push_back(costs_.cluster()
                               .device_type(cls.devices.front())
                               .peak_flops(config.dtype, config.tf32) *
                           oracle_->shapes(stage.cls)[stage.shape].size());
        }
        ends = proportional_split(layers, shares);
        break;
      }
      case PeerSpace::amp:
        ends = min_max_split(*oracle_, stages);
        break;
    }
    for (int s = 0; s < count; ++s) {
      stages[s].first = s == 0 ? 0 : ends[s - 1];
      stages[s].end = ends[s];
    }
    Candidate candidate;
    candidate.micro_batch = micro_batch_;
    for (const auto& choice : chosen) candidate.pipeline.order.push_back(choice.cls);
    candidate.pipeline.stages = stages;
    plan::Plan plan = batch_.new_plan();
    try {
      plan.pipeline(0) =
          to_pipeline(candidate, classes_, oracle_->all_shapes(), batch_.global_batch);
    } catch (const std::invalid_argument&) {
      return;
    }
    for (int s = 0; s < count; ++s) {
      plan.stages[s].recompute = least_recompute(costs_, plan, s).value_or(model::Recompute::full);
    }
    if (!simulatable(plan)) return;
    if (best_) {
      // Too slow by its lower bound to beat the fastest that fits, or too large to fit
      // where it could win only by fitting: not simulated.
      const bool cannot_be_faster = iteration_lower_bound(costs_, plan) >= best_->iteration_time();
      if (best_->fits && cannot_be_faster) return;
      if ((best_->fits || cannot_be_faster) && cannot_fit(costs_, plan)) return;
    }
    ScoredPlan scored = score_plan(costs_, std::move(plan), std::string(to_string(space_)));
    if (!best_ || preferred(scored, *best_)) best_ = std::move(scored);
  }

  const cost::CostModel& costs_;
  const BatchSettings& batch_;
  PeerSpace space_;
  std::vector<DeviceClass> classes_;
  const CostOracle* oracle_ = nullptr;
  int64_t micro_batch_ = 1;
  std::vector<int> order_;
  std::optional<ScoredPlan> best_;
};

}  // namespace

std::string_view to_string(PeerSpace space) {
  return kNames[static_cast<int>(space)];
}

std::vector<PeerSpace> peer_spaces() {
  return {PeerSpace::sailor, PeerSpace::metis, PeerSpace::amp};
}

std::optional<ScoredPlan> best_of_peer_space(const cost::CostModel& costs,
                                             const BatchSettings& batch, PeerSpace space) {
  return PeerSearch(costs, batch, space).run();
}

}  // namespace hyperpipe::planner
