#include "hyperpipe/planner/stage_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperpipe::planner {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One DP cell: the best way found to cover layers [e, L) with j stages, the first of them
// of class order[k] holding u of its devices.
struct Cell {
  double value = kInfinity;  // Σ (τ + 2λ), or the bottleneck in bottleneck mode
  double worst = 0;          // bottleneck of that way
  int next = -1;             // cell of the stage after this one (-1: this is the last)
  StageChoice stage;
};

enum class Mode { sum, bottleneck };

class Dp {
 public:
  Dp(const StageOracle& oracle, const std::vector<int>& order, const SearchOptions& options)
      : oracle_(oracle), order_(order), options_(options), layers_(oracle.num_layers()) {
    for (int cls : order_) max_used_ = std::max(max_used_, oracle.class_size(cls));
    max_stages_ = std::min(options.max_stages, layers_);
    cells_.resize(static_cast<size_t>(layers_ + 1) * order_.size() * (max_used_ + 1) *
                  (max_stages_ + 1));
  }

  // Runs the DP with every τ and λ at most `bound`; returns the index of the best cell
  // covering the whole chain, or -1.
  int run(Mode mode, double bound) {
    std::fill(cells_.begin(), cells_.end(), Cell{});
    mode_ = mode;
    bound_ = bound;
    const int last = static_cast<int>(order_.size()) - 1;
    place_stage(-1, last, 0, 0, layers_);
    for (int e = layers_ - 1; e >= 1; --e) {
      for (int k = 0; k <= last; ++k) {
        const int cls = order_[k];
        for (int u = 1; u <= oracle_.class_size(cls); ++u) {
          for (int j = 1; j < max_stages_; ++j) {
            const int from = index(e, k, u, j);
            if (cells_[from].value == kInfinity) continue;
            place_stage(from, k, u, j, e);                 // another stage of the same class
            if (k > 0) place_stage(from, k - 1, 0, j, e);  // a stage of the class before
          }
        }
      }
    }
    int best = -1;
    for (int u = 1; u <= oracle_.class_size(order_[0]); ++u) {
      for (int j = 1; j <= max_stages_; ++j) {
        const int at = index(0, 0, u, j);
        if (better(cells_[at], best < 0 ? nullptr : &cells_[best])) best = at;
      }
    }
    return best;
  }

  const Cell& cell(int at) const { return cells_[at]; }

  std::vector<StageChoice> stages_from(int at) const {
    std::vector<StageChoice> stages;
    for (; at >= 0; at = cells_[at].next) stages.push_back(cells_[at].stage);
    return stages;
  }

 private:
  int index(int e, int k, int u, int j) const {
    return ((e * static_cast<int>(order_.size()) + k) * (max_used_ + 1) + u) * (max_stages_ + 1) +
           j;
  }

  static bool better(const Cell& candidate, const Cell* incumbent) {
    if (candidate.value == kInfinity) return false;
    if (!incumbent) return true;
    if (candidate.value != incumbent->value) return candidate.value < incumbent->value;
    return candidate.worst < incumbent->worst;
  }

  // Places a stage ending at layer `end` of class order[k] before the cell `from` (whose
  // first stage is of class order[from_k] with `used` of its devices and `after` stages
  // from it to the end); `used` is 0 when the new stage opens class order[k].
  void place_stage(int from, int k, int used, int after, int end) {
    const int cls = order_[k];
    const int next_cls = from < 0 ? -1 : cells_[from].stage.cls;
    const int in_flight = std::min(after + 1, options_.micro_batches);
    const auto& shapes = oracle_.shapes(cls);
    for (int g = 0; g < static_cast<int>(shapes.size()); ++g) {
      const int size = shapes[g].size();
      if (used + size > oracle_.class_size(cls)) continue;
      const double link = from < 0 ? 0.0 : oracle_.link_time(cls, g, next_cls, end);
      if (link > bound_) continue;
      for (int first = end - 1; first >= 0; --first) {
        model::Recompute recompute{};
        bool fitting = false;
        for (model::Recompute option : kRecomputeOptions) {
          if (oracle_.fits(cls, g, first, end, option, in_flight)) {
            recompute = option;
            fitting = true;
            break;
          }
        }
        if (!fitting) break;  // more layers will not fit either
        const double time = oracle_.stage_time(cls, g, first, end, recompute);
        if (time > bound_) break;  // nor will they be faster
        Cell candidate;
        const double step = std::max(time, link);
        if (from < 0) {
          candidate.value = time;
          candidate.worst = time;
        } else {
          const Cell& rest = cells_[from];
          candidate.value =
              mode_ == Mode::sum ? rest.value + time + 2 * link : std::max(rest.value, step);
          candidate.worst = std::max(rest.worst, step);
        }
        candidate.next = from;
        candidate.stage = {cls, g, first, end, recompute, time, link};
        Cell& target = cells_[index(first, k, used + size, after + 1)];
        if (better(candidate, &target)) target = candidate;
      }
    }
  }

  const StageOracle& oracle_;
  const std::vector<int>& order_;
  const SearchOptions& options_;
  int layers_;
  int max_used_ = 0;
  int max_stages_ = 0;
  Mode mode_ = Mode::sum;
  double bound_ = kInfinity;
  std::vector<Cell> cells_;
};

// Every order of every non-empty subset of classes.
void orders(int classes, std::vector<int>& prefix, std::vector<bool>& used,
            std::vector<std::vector<int>>& out) {
  if (!prefix.empty()) out.push_back(prefix);
  for (int c = 0; c < classes; ++c) {
    if (used[c]) continue;
    used[c] = true;
    prefix.push_back(c);
    orders(classes, prefix, used, out);
    prefix.pop_back();
    used[c] = false;
  }
}

}  // namespace

double objective(const std::vector<StageChoice>& stages, int micro_batches) {
  double sum = 0;
  double worst = 0;
  for (const auto& stage : stages) {
    sum += stage.time + 2 * stage.link_after;
    worst = std::max({worst, stage.time, stage.link_after});
  }
  return sum + (micro_batches - 1) * worst;
}

std::vector<Pipeline> search_pipelines(const StageOracle& oracle, const SearchOptions& options) {
  std::vector<std::vector<int>> all_orders;
  std::vector<int> prefix;
  std::vector<bool> used(oracle.num_classes(), false);
  orders(oracle.num_classes(), prefix, used, all_orders);

  std::vector<Pipeline> result;
  const double m1 = options.micro_batches - 1;
  for (const auto& order : all_orders) {
    Dp dp(oracle, order, options);
    const int tightest = dp.run(Mode::bottleneck, kInfinity);
    if (tightest < 0) continue;  // nothing fits in this order
    const double floor = dp.cell(tightest).value;
    std::optional<Pipeline> best;
    double bound = kInfinity;
    while (bound >= floor) {
      const int at = dp.run(Mode::sum, bound);
      if (at < 0) break;
      const Cell& found = dp.cell(at);
      const double j = found.value + m1 * found.worst;
      if (!best || j < best->objective) {
        best = Pipeline{order, dp.stages_from(at), found.value, found.worst, j};
      }
      // Tighter bounds give Σ ≥ found.value and a bottleneck ≥ floor.
      if (found.value + m1 * floor >= best->objective) break;
      bound = std::nextafter(found.worst, -kInfinity);
    }
    if (best) result.push_back(*best);
  }
  std::stable_sort(result.begin(), result.end());
  return result;
}

}  // namespace hyperpipe::planner
