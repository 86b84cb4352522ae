#include "hyperpipe/planner/exhaustive_search.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "hyperpipe/common/log.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/cost_oracle.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The enumeration for one micro-batch size (and one dp, for same-dp spaces).
class Enumeration {
 public:
  using Clock = std::chrono::steady_clock;

  Enumeration(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
              const CostOracle& oracle, int64_t micro_batch, const ExhaustiveOptions& options,
              ExhaustiveResult& result, double& incumbent, Clock::time_point start)
      : start_(start),
        costs_(costs),
        classes_(classes),
        oracle_(oracle),
        micro_batch_(micro_batch),
        micro_batches_(static_cast<int>(options.batch.global_batch / micro_batch)),
        options_(options),
        result_(result),
        incumbent_(incumbent) {
    // Per class, prefix sums of each layer's cheapest device-time over the class's shapes.
    const int layers = oracle.num_layers();
    cheapest_.assign(classes.size(), std::vector<double>(layers + 1, 0.0));
    for (int c = 0; c < oracle.num_classes(); ++c) {
      for (int l = 0; l < layers; ++l) {
        double least = kInfinity;
        for (int g = 0; g < static_cast<int>(oracle.shapes(c).size()); ++g) {
          least = std::min(least, oracle.stage_time(c, g, l, l + 1, model::Recompute::none) *
                                      oracle.shapes(c)[g].size());
        }
        cheapest_[c][l + 1] = cheapest_[c][l] + least;
      }
    }
  }

  void run() {
    std::vector<int> usable;
    for (int c = 0; c < oracle_.num_classes(); ++c) {
      if (!oracle_.shapes(c).empty()) usable.push_back(c);
    }
    for (const auto& order : every_class_order(usable)) {
      order_ = order;
      stages_.clear();
      place(oracle_.num_layers(), static_cast<int>(order_.size()) - 1, 0);
    }
  }

 private:
  // Whether the layers [0, end) can still beat the incumbent on classes order[0 … k] with
  // `used` devices of order[k] taken.
  bool rest_can_win(int end, int k, int used) const {
    if (!options_.prune || end == 0) return true;
    double devices = oracle_.class_size(order_[k]) - used;
    for (int j = 0; j < k; ++j) devices += oracle_.class_size(order_[j]);
    if (devices <= 0) return false;
    // Each layer on the class where it costs the least device-time.
    double work = 0;
    for (int l = 0; l < end; ++l) {
      double least = kInfinity;
      for (int j = 0; j <= k; ++j) {
        least = std::min(least, cheapest_[order_[j]][l + 1] - cheapest_[order_[j]][l]);
      }
      work += least;
    }
    return micro_batches_ * work / devices < incumbent_;
  }

  // Stages back to front: a stage ending at layer `end`, of class order[k], with `used`
  // devices of that class taken by the stages after it.
  void place(int end, int k, int used) {
    const int after = static_cast<int>(stages_.size());
    const int most = options_.space.stages > 0 ? options_.space.stages : options_.space.max_stages;
    if (after >= most || out_of_time()) return;
    const int cls = order_[k];
    const int in_flight = schedule::one_f_one_b_in_flight(after + 1, micro_batches_);
    const auto& shapes = oracle_.shapes(cls);
    for (int g = 0; g < static_cast<int>(shapes.size()) && result_.complete; ++g) {
      const int taken = used + shapes[g].size();
      if (taken > oracle_.class_size(cls)) continue;
      // Every recomputation option, or only the one the space fixes.
      const auto& fixed = options_.space.recompute;
      int option = fixed ? static_cast<int>(*fixed) : 0;
      const int end_option = fixed ? option + 1 : 3;
      for (int first = end - 1; first >= 0; --first) {
        while (option < end_option &&
               !oracle_.fits(cls, g, first, end, kRecomputeOptions[option], in_flight)) {
          ++option;
        }
        if (option == end_option) break;  // more layers fit no better
        const double time = oracle_.stage_time(cls, g, first, end, kRecomputeOptions[option]);
        // Nor run faster: the group's compute, then its optimizer step (iteration_lower_bound).
        if (options_.prune &&
            micro_batches_ * time + oracle_.optimizer_time(cls, g, first, end) >= incumbent_) {
          break;
        }
        StageChoice stage;
        stage.cls = cls;
        stage.shape = g;
        stage.first = first;
        stage.end = end;
        stage.recompute = kRecomputeOptions[option];
        stage.time = time;
        stages_.push_back(stage);
        if (first == 0) {
          if (k == 0) evaluate();
        } else {
          if (rest_can_win(first, k, taken)) place(first, k, taken);
          if (k > 0 && rest_can_win(first, k - 1, 0)) place(first, k - 1, 0);
        }
        stages_.pop_back();
      }
    }
  }

  void evaluate() {
    if (out_of_time()) return;
    const int stages = static_cast<int>(stages_.size());
    if (options_.space.stages > 0 && stages != options_.space.stages) return;
    Candidate candidate;
    candidate.micro_batch = micro_batch_;
    candidate.pipeline.order = order_;
    candidate.pipeline.stages.assign(stages_.rbegin(), stages_.rend());
    plan::Plan plan = options_.batch.new_plan();
    try {
      plan.pipeline(0) =
          to_pipeline(candidate, classes_, oracle_.all_shapes(), options_.batch.global_batch);
    } catch (const std::invalid_argument&) {
      ++result_.unpackable;
      return;
    }
    if (!simulatable(plan)) return;
    if (options_.prune && !any_variant_can_win(plan)) {
      ++result_.bounded;
      return;
    }
    ++result_.layouts;
    auto scored = best_schedule(costs_, plan, "exhaustive", options_.space,
                                options_.prune ? incumbent_ : kInfinity);
    if (!scored) return;
    result_.bound_ratio_max =
        std::max(result_.bound_ratio_max,
                 iteration_lower_bound(costs_, scored->plan) / scored->iteration_time());
    if (!scored->fits || scored->iteration_time() >= incumbent_) return;
    incumbent_ = scored->iteration_time();
    result_.best = std::move(*scored);
  }

  // Whether some schedule of the space could run the layout faster than the incumbent
  // (iteration_lower_bound: the same for every kind without chunks).
  bool any_variant_can_win(const plan::Plan& plan) const {
    if (iteration_lower_bound(costs_, plan) < incumbent_) return true;
    if (!options_.space.allows(schedule::ScheduleKind::interleaved)) return false;
    for (int chunks : kInterleaveChunks) {
      const auto interleaved = interleave(plan, chunks);
      if (!interleaved) continue;
      plan::Plan candidate = plan;
      candidate.pipeline(0) = *interleaved;
      if (iteration_lower_bound(costs_, candidate) < incumbent_) return true;
    }
    return false;
  }

  bool out_of_time() {  // a clock read: cheap beside a stage's cost lookups
    if (options_.time_limit_s <= 0 || !result_.complete) return !result_.complete;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed > options_.time_limit_s) result_.complete = false;
    return !result_.complete;
  }

  const Clock::time_point start_;
  const cost::CostModel& costs_;
  const std::vector<DeviceClass>& classes_;
  const CostOracle& oracle_;
  int64_t micro_batch_;
  int micro_batches_;
  const ExhaustiveOptions& options_;
  ExhaustiveResult& result_;
  double& incumbent_;
  std::vector<std::vector<double>> cheapest_;  // [class][layer prefix]
  std::vector<int> order_;
  std::vector<StageChoice> stages_;  // back to front
};

}  // namespace

ExhaustiveResult exhaustive_search(const cost::CostModel& costs, const ExhaustiveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto classes = device_classes(costs.cluster());
  const int64_t seq = costs.model().config().sequence_length(options.batch.seq_len);
  ExhaustiveResult result;
  double incumbent = options.incumbent;
  for (int64_t b : options.batch.micro_batch_sizes) {
    // One dp on every stage: each dp a class offers at this size, searched apart.
    std::vector<int> dps{options.space.dp};
    if (options.space.same_dp && options.space.dp == 0) {
      dps.clear();
      for (const auto& cls : classes) {
        for (const Shape& shape : class_shapes(
                 cls, costs.model().config().tensor_parallel_divisor(), b, options.space.max_tp)) {
          if (std::find(dps.begin(), dps.end(), shape.dp) == dps.end()) dps.push_back(shape.dp);
        }
      }
    }
    for (int dp : dps) {
      const CostOracle oracle(costs, classes, b, seq, options.space.max_tp, dp, options.space.tp);
      Enumeration(costs, classes, oracle, b, options, result, incumbent, start).run();
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log().debug("exhaustive search: {} layouts, {} unpackable, {:.2f} s", result.layouts,
              result.unpackable, result.seconds);
  return result;
}

}  // namespace hyperpipe::planner
