#include "hyperpipe/planner/stage_search.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>

#include "hyperpipe/planner/cost_oracle.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One DP cell: the best way found to cover layers [e, L) with j stages, the first of them
// (layers [e, next cell's e)) of class order[k] holding u units of its devices. Kept small: the
// cells are reset for every bound.
struct Cell {
  double value = kInfinity;  // Σ (τ + 2λ)
  double worst = 0;          // bottleneck of that way
  int next = -1;             // cell of the stage after this one (-1: this is the last)
  int16_t shape = 0;         // of the first stage
  int8_t recompute = 0;      // of the first stage
  uint32_t run = 0;          // the run that wrote it; older cells count as empty
};

// Which cells of one (first layer, class) row a run has written: the largest device
// count and stage count, so the dominance sweep skips the empty rest.
struct RowExtent {
  uint32_t run = 0;
  int max_used = 0;
  int max_after = 0;
};

// Memory the DPs of one search share: cells are stamped with their run, so a new DP (or
// a new bound) starts empty without clearing or reallocating millions of cells.
struct DpWorkspace {
  std::vector<Cell> cells;
  std::vector<RowExtent> rows;
  // Per row, the cells the current run has written, as bits u · (stages + 1) + j: a few
  // percent of a row's extent on large clusters, so the dominance sweep visits only them,
  // in order (a sort of their indices took a twentieth of the planner's time).
  std::vector<std::vector<uint64_t>> written;
  uint32_t run = 0;
};

// The smallest value over j' <= j, for j from 1 to a few dozen, as values come in: a
// Fenwick tree over minima (a value only ever lowers a position).
class PrefixMin {
 public:
  void reset(int size) { tree_.assign(static_cast<size_t>(size) + 1, kInfinity); }
  void lower(int j, double value) {
    for (; j < static_cast<int>(tree_.size()); j += j & -j) tree_[j] = std::min(tree_[j], value);
  }
  double up_to(int j) const {
    double least = kInfinity;
    for (; j > 0; j -= j & -j) least = std::min(least, tree_[j]);
    return least;
  }

 private:
  std::vector<double> tree_;
};

// Templated on the oracle so that the cost model's oracle (a final class) is called
// without virtual dispatch in the innermost loop.
template <typename Oracle>
class Dp {
 public:
  Dp(const Oracle& oracle, const std::vector<int>& order, const SearchOptions& options,
     DpWorkspace& workspace)
      : oracle_(oracle),
        order_(order),
        options_(options),
        layers_(oracle.num_layers()),
        unit_(oracle.num_classes(), 1),
        per_micro_batch_(1.0 / std::max(1, options.micro_batches)),
        run_(workspace.run),
        cells_(workspace.cells),
        rows_(workspace.rows),
        written_(workspace.written) {
    int devices = 0;
    for (int cls : order_) {
      // Devices are counted in units of the class's smallest group: whole nodes when
      // every shape is, so the DP does not track GPU counts no group can leave.
      int unit = 0;
      for (const Shape& shape : oracle.shapes(cls)) unit = std::gcd(unit, shape.size());
      unit_[cls] = std::max(unit, 1);
      max_used_ = std::max(max_used_, units(cls));
      devices += oracle.class_size(cls);
    }
    // Every stage holds at least one layer and one device.
    max_stages_ =
        std::min({options.stages > 0 ? options.stages : options.max_stages, layers_, devices});
    if (options.recompute) {
      first_option_ = static_cast<int>(*options.recompute);
      end_option_ = first_option_ + 1;
    }
    const size_t cells =
        static_cast<size_t>(layers_ + 1) * order_.size() * (max_used_ + 1) * (max_stages_ + 1);
    if (cells_.size() < cells) cells_.resize(cells);
    const size_t rows = static_cast<size_t>(layers_ + 1) * order_.size();
    if (rows_.size() < rows) rows_.resize(rows);
    if (written_.size() < rows) written_.resize(rows);
    row_words_ = (static_cast<size_t>(max_used_ + 1) * (max_stages_ + 1) + 63) / 64;
  }

  // Runs the DP with every τ and λ at most `bound` and every Σ at most `cap` (a partial
  // pipeline's Σ only grows as stages are added); returns the index of the best cell
  // covering the whole chain, or -1.
  int run(double bound, double cap = kInfinity) {
    ++run_;  // every cell written by an earlier run is now empty, without touching it
    bound_ = bound;
    cap_ = cap;
    const int last = static_cast<int>(order_.size()) - 1;
    place_stage(-1, -1, last, 0, 0, layers_);
    for (int e = layers_ - 1; e >= 1; --e) {
      for (int k = 0; k <= last; ++k) {
        const int cls = order_[k];
        const RowExtent& row = rows_[row_index(e, k)];
        if (row.run != run_) continue;  // nothing covers [e, L) starting with this class
        // A cell is dominated by one with no more devices used, no more stages after it
        // (fewer micro-batches in flight, more stages left) and no larger value: skip it.
        // best_below[u][j] is the smallest value over cells (u' <= u, j' <= j). With an
        // exact stage count, fewer stages after it do not dominate: the layers before may
        // not hold the more stages left.
        // The written cells in (u, j) order, as a sweep over the whole extent meets them;
        // those before a cell are exactly the (u', j') <= (u, j) other than itself.
        const auto& bits = written_[row_index(e, k)];
        const bool exact = options_.stages > 0;
        below_.reset(row.max_after);
        if (exact) same_j_.assign(static_cast<size_t>(row.max_after) + 1, kInfinity);
        for (size_t word = 0; word < bits.size(); ++word) {
          for (uint64_t rest = bits[word]; rest != 0; rest &= rest - 1) {
            const int local = static_cast<int>(word * 64) + std::countr_zero(rest);
            const int u = local / (max_stages_ + 1);
            const int j = local % (max_stages_ + 1);
            const int from = index(e, k, u, j);
            const double value = value_of(from);
            double below;
            if (exact) {
              below = same_j_[j];
              same_j_[j] = std::min(below, value);
            } else {
              below = below_.up_to(j);
              below_.lower(j, value);
            }
            if (value >= below || j == max_stages_) continue;
            place_stage(from, cls, k, u, j, e);                 // another stage of the same class
            if (k > 0) place_stage(from, cls, k - 1, 0, j, e);  // a stage of the class before
          }
        }
      }
    }
    int best = -1;
    per_stage_count_.assign(max_stages_ + 1, -1);
    for (int u = 1; u <= units(order_[0]); ++u) {
      // (With an exact count beyond the layers or devices, none.)
      for (int j = std::max(options_.stages, 1); j <= max_stages_; ++j) {
        const int at = index(0, 0, u, j);
        if (value_of(at) == kInfinity) continue;
        if (better(cells_[at], best < 0 ? nullptr : &cells_[best])) best = at;
        int& of_count = per_stage_count_[j];
        if (better(cells_[at], of_count < 0 ? nullptr : &cells_[of_count])) of_count = at;
      }
    }
    return best;
  }

  // After run(): the best cell covering the whole chain with exactly j stages, or -1.
  int best_with_stages(int j) const { return per_stage_count_[j]; }
  int max_stages() const { return max_stages_; }

  const Cell& cell(int at) const { return cells_[at]; }
  double value_of(int at) const { return cells_[at].run == run_ ? cells_[at].value : kInfinity; }

  std::vector<StageChoice> stages_from(int at) const {
    std::vector<StageChoice> stages;
    for (; at >= 0; at = cells_[at].next) {
      const Cell& cell = cells_[at];
      StageChoice stage;
      stage.first = layer_of(at);
      stage.cls = order_[position_of(at)];
      stage.end = cell.next < 0 ? layers_ : layer_of(cell.next);
      stage.shape = cell.shape;
      stage.recompute = static_cast<model::Recompute>(cell.recompute);
      stage.time =
          oracle_.stage_time(stage.cls, stage.shape, stage.first, stage.end, stage.recompute) +
          per_micro_batch_ * oracle_.epilogue_time(stage.cls, stage.shape, stage.first, stage.end);
      if (cell.next >= 0) {
        const int next_cls = order_[position_of(cell.next)];
        stage.link_after = oracle_.link_time(stage.cls, stage.shape, next_cls, stage.end);
      }
      stages.push_back(stage);
    }
    return stages;
  }

 private:
  // Devices of a class in the DP's units.
  int units(int cls) const { return oracle_.class_size(cls) / unit_[cls]; }

  int row_index(int e, int k) const { return e * static_cast<int>(order_.size()) + k; }

  // The first layer innermost: placing a stage walks its first layer down one by one with
  // the rest fixed, so its writes go to neighbouring cells.
  int index(int e, int k, int u, int j) const {
    return ((k * (max_used_ + 1) + u) * (max_stages_ + 1) + j) * (layers_ + 1) + e;
  }
  int layer_of(int at) const { return at % (layers_ + 1); }
  int position_of(int at) const {
    return at / ((max_used_ + 1) * (max_stages_ + 1) * (layers_ + 1));
  }

  static bool better(const Cell& candidate, const Cell* incumbent) {
    if (candidate.value == kInfinity) return false;
    if (!incumbent) return true;
    if (candidate.value != incumbent->value) return candidate.value < incumbent->value;
    return candidate.worst < incumbent->worst;
  }

  // Places a stage ending at layer `end` of class order[k] before the cell `from` (whose
  // first stage is of class `next_cls`, with `after` stages from it to the end); `used`
  // devices of order[k] are taken already (0 when the new stage opens the class).
  void place_stage(int from, int next_cls, int k, int used, int after, int end) {
    const int cls = order_[k];
    const int in_flight = schedule::one_f_one_b_in_flight(after + 1, options_.micro_batches);
    const auto& shapes = oracle_.shapes(cls);
    for (int g = 0; g < static_cast<int>(shapes.size()); ++g) {
      if (shapes[g].size() % unit_[cls] != 0) continue;
      const int size = shapes[g].size() / unit_[cls];  // in units
      if (used + size > units(cls)) continue;
      const double link = from < 0 ? 0.0 : oracle_.link_time(cls, g, next_cls, end);
      if (link > bound_) continue;
      if constexpr (std::is_same_v<Oracle, CostOracle>) {
        const auto view = oracle_.view(cls, g);
        place_ranges(
            from, k, used + size, after, end, g, link,
            [&](int first, int option) { return view.fits(first, end, option, in_flight); },
            [&](int first, int option) {
              return view.stage_time(first, end, option) +
                     per_micro_batch_ * view.epilogue_time(first, end);
            });
      } else {
        place_ranges(
            from, k, used + size, after, end, g, link,
            [&](int first, int option) {
              return oracle_.fits(cls, g, first, end, kRecomputeOptions[option], in_flight);
            },
            [&](int first, int option) {
              return oracle_.stage_time(cls, g, first, end, kRecomputeOptions[option]) +
                     per_micro_batch_ * oracle_.epilogue_time(cls, g, first, end);
            });
      }
    }
  }

  // The layer ranges [first, end) for one shape g of class order[k], longest last.
  template <typename Fits, typename Time>
  void place_ranges(int from, int k, int target_used, int after, int end, int g, double link,
                    const Fits& fits, const Time& time_of) {
    const double rest_value = from < 0 ? 0.0 : cells_[from].value;
    const double rest_worst = from < 0 ? 0.0 : cells_[from].worst;
    // More layers need at least as much recomputation: the option only moves forward.
    int option = first_option_;
    for (int first = end - 1; first >= 0; --first) {
      while (option < end_option_ && !fits(first, option)) ++option;
      if (option == end_option_) break;  // more layers will not fit either
      const double time = time_of(first, option);
      if (time > bound_) break;  // nor will they be faster
      Cell candidate;
      candidate.value = rest_value + time + 2 * link;
      if (candidate.value > cap_) break;  // nor will they be smaller
      candidate.worst = std::max({rest_worst, time, link});
      candidate.next = from;
      candidate.shape = static_cast<int16_t>(g);
      candidate.recompute = static_cast<int8_t>(option);
      const int to = index(first, k, target_used, after + 1);
      Cell& target = cells_[to];
      const bool empty = value_of(to) == kInfinity;
      if (better(candidate, empty ? nullptr : &target)) {
        target = candidate;
        target.run = run_;
        const int at_row = row_index(first, k);
        RowExtent& row = rows_[at_row];
        if (row.run != run_) {
          row = {run_, 0, 0};
          written_[at_row].assign(row_words_, 0);
        }
        row.max_used = std::max(row.max_used, target_used);
        row.max_after = std::max(row.max_after, after + 1);
        if (empty) {
          const int local = target_used * (max_stages_ + 1) + after + 1;
          written_[at_row][local / 64] |= uint64_t{1} << (local % 64);
        }
      }
    }
  }

  const Oracle& oracle_;
  const std::vector<int>& order_;
  const SearchOptions& options_;
  int layers_;
  std::vector<int> unit_;  // per class: devices per unit of `u`
  int max_used_ = 0;
  int max_stages_ = 0;
  // The recomputation options a stage may take, [first, end) of kRecomputeOptions.
  int first_option_ = 0;
  int end_option_ = static_cast<int>(std::size(kRecomputeOptions));
  double bound_ = kInfinity;
  double cap_ = kInfinity;
  // A stage's epilogue counts as 1/m of it per micro-batch: the iteration is about
  // m · (τ + E/m) on the slowest stage (stage_search.h).
  double per_micro_batch_;
  uint32_t& run_;  // the workspace's: runs of every DP of the search count on
  std::vector<Cell>& cells_;
  std::vector<RowExtent>& rows_;
  std::vector<std::vector<uint64_t>>& written_;
  size_t row_words_ = 0;        // 64-bit words of a row's bits
  PrefixMin below_;             // over j, for the dominance sweep
  std::vector<double> same_j_;  // per j, with an exact stage count
  std::vector<int> per_stage_count_;
};

// A lower bound on an order's objective without running its DP. J ≥ Σ τ + (m − 1)·max τ;
// Σ τ is at least one pass through every layer at its fastest on the order's classes, and
// max τ at least the device-weighted average stage time: the device-time of all layers at
// their cheapest (time × GPUs of the best shape) over the order's devices.
class DeviceTimeBound {
 public:
  // Per layer, its compute plus its share of the epilogue (1/m of it, without the fixed
  // part a stage pays once): a stage's τ is at least the sum over its layers.
  DeviceTimeBound(const StageOracle& oracle, int micro_batches)
      : oracle_(oracle),
        device_time_(oracle.num_classes(), std::vector<double>(oracle.num_layers(), kInfinity)),
        fastest_(oracle.num_classes(), std::vector<double>(oracle.num_layers(), kInfinity)) {
    for (int c = 0; c < oracle.num_classes(); ++c) {
      for (int g = 0; g < static_cast<int>(oracle.shapes(c).size()); ++g) {
        const double size = oracle.shapes(c)[g].size();
        for (int l = 0; l < oracle.num_layers(); ++l) {
          const double epilogue =
              oracle.epilogue_time(c, g, 0, l + 1) - oracle.epilogue_time(c, g, 0, l);
          const double time = oracle.stage_time(c, g, l, l + 1, model::Recompute::none) +
                              std::max(0.0, epilogue) / std::max(1, micro_batches);
          device_time_[c][l] = std::min(device_time_[c][l], time * size);
          fastest_[c][l] = std::min(fastest_[c][l], time);
        }
      }
    }
  }

  double operator()(const std::vector<int>& order, int micro_batches) const {
    return pass(order) + (micro_batches - 1) * average_stage(order);
  }

  // max τ of any pipeline of the order: at least the device-weighted average stage time,
  // and at least the slowest layer at its fastest (a stage holds one layer or more).
  double average_stage(const std::vector<int>& order) const {
    double work = 0;
    double devices = 0;
    double slowest_layer = 0;
    for (int l = 0; l < oracle_.num_layers(); ++l) {
      double cheapest = kInfinity;
      double quickest = kInfinity;
      for (int c : order) {
        cheapest = std::min(cheapest, device_time_[c][l]);
        quickest = std::min(quickest, fastest_[c][l]);
      }
      work += cheapest;
      slowest_layer = std::max(slowest_layer, quickest);
    }
    for (int c : order) devices += oracle_.class_size(c);
    return std::max(work / devices, slowest_layer);
  }

  // Σ τ of any pipeline of the order: every layer once, at its fastest.
  double pass(const std::vector<int>& order) const {
    double total = 0;
    for (int l = 0; l < oracle_.num_layers(); ++l) {
      double quickest = kInfinity;
      for (int c : order) quickest = std::min(quickest, fastest_[c][l]);
      total += quickest;
    }
    return total;
  }

 private:
  const StageOracle& oracle_;
  std::vector<std::vector<double>> device_time_;
  std::vector<std::vector<double>> fastest_;
};

std::vector<std::vector<int>> all_orders_of(int classes) {
  std::vector<int> all(static_cast<size_t>(classes));
  std::iota(all.begin(), all.end(), 0);
  return every_class_order(all);
}

}  // namespace

double objective_lower_bound(const StageOracle& oracle, int micro_batches) {
  const DeviceTimeBound bound(oracle, micro_batches);
  double lowest = kInfinity;
  for (const auto& order : all_orders_of(oracle.num_classes())) {
    lowest = std::min(lowest,
                      bound(order, micro_batches) + oracle.tail_time(order.front(), order.back()));
  }
  return lowest;
}

double objective(const std::vector<StageChoice>& stages, int micro_batches) {
  double sum = 0;
  double worst = 0;
  for (const auto& stage : stages) {
    sum += stage.time + 2 * stage.link_after;
    worst = std::max({worst, stage.time, stage.link_after});
  }
  return sum + (micro_batches - 1) * worst;
}

// Whether two pipelines of one order are the same layout (stage choices, times aside).
bool same_stages(const Pipeline& a, const Pipeline& b) {
  return std::equal(a.stages.begin(), a.stages.end(), b.stages.begin(), b.stages.end(),
                    [](const StageChoice& x, const StageChoice& y) {
                      return x.cls == y.cls && x.shape == y.shape && x.first == y.first &&
                             x.end == y.end && x.recompute == y.recompute;
                    });
}

template <typename Oracle>
std::vector<Pipeline> search(const Oracle& oracle, const SearchOptions& options,
                             std::vector<Pipeline>* runners_up,
                             std::vector<Pipeline>* alternatives) {
  const auto all_orders = all_orders_of(oracle.num_classes());

  // Promising orders first, so the objective to beat drops early: by the combined speed
  // of their classes (devices over the time one device takes for the whole model).
  const double m1 = options.micro_batches - 1;
  std::vector<double> speed(oracle.num_classes(), 0.0);
  for (int c = 0; c < oracle.num_classes(); ++c) {
    // A class with no valid (dp, tp) shape at this micro-batch size hosts no stage.
    if (oracle.shapes(c).empty()) continue;
    const double whole = oracle.stage_time(c, 0, 0, oracle.num_layers(), model::Recompute::full);
    speed[c] = oracle.class_size(c) / std::max(whole, 1e-30);
  }
  std::vector<double> order_speed;
  for (const auto& order : all_orders) {
    double total = 0;
    for (int c : order) total += speed[c];
    order_speed.push_back(total);
  }
  std::vector<size_t> work(all_orders.size());
  for (size_t o = 0; o < work.size(); ++o) work[o] = o;
  std::stable_sort(work.begin(), work.end(),
                   [&](size_t a, size_t b) { return order_speed[a] > order_speed[b]; });

  std::vector<Pipeline> result;  // the best pipeline of each order searched, best first
  // What an order must beat to matter: the keep-th best so far (or the caller's bound).
  const auto to_beat = [&]() {
    if (options.per_order || static_cast<int>(result.size()) < options.keep) {
      return options.prune_above;
    }
    return std::min(options.prune_above, result[options.keep - 1].objective);
  };
  const DeviceTimeBound bound_of(oracle, options.micro_batches);
  // Kept across searches (every micro-batch size, the probe, each replica group): its
  // cells are millions on large clusters, and run stamps make old ones count as empty.
  thread_local DpWorkspace workspace;
  if (options.max_orders > 0 && static_cast<int>(work.size()) > options.max_orders) {
    work.resize(options.max_orders);
  }
  for (size_t index : work) {
    const auto& order = all_orders[index];
    const double tail = oracle.tail_time(order.front(), order.back());
    if (bound_of(order, options.micro_batches) + tail >= to_beat()) continue;
    Dp<Oracle> dp(oracle, order, options, workspace);
    const double limit = to_beat() - tail;
    // Σ τ is at least one fastest pass, so a bottleneck w only wins under
    // (limit − pass) / (m − 1).
    const double pass = bound_of.pass(order);
    const double widest = m1 > 0 ? (limit - pass) / m1 : limit;
    // The bottleneck of any pipeline of the order is at least the device-weighted average
    // stage time. (Computing the true tightest bottleneck with its own DP run measured
    // slower than the extra Σ runs this looser bound costs.)
    const double floor = bound_of.average_stage(order);
    std::optional<Pipeline> best;
    std::vector<std::optional<Pipeline>> best_of_count(runners_up ? dp.max_stages() + 1 : 0);
    std::vector<Pipeline> others;  // for alternatives: every other count's-best met
    double bound = m1 > 0 ? widest : kInfinity;
    // Any pipeline completing a partial one has Σ at least the partial one's and a
    // bottleneck at least the floor: only a Σ under the cap can still beat the order's best
    // so far and come under prune_above, the two things a pipeline must do to be kept (or,
    // for runners-up, come within their margin of that). So every order's best is what it
    // was without the cap, and every runner-up within the margin.
    const auto value_cap = [&]() {
      const double beat = std::min(best ? best->objective : kInfinity, options.prune_above);
      return (runners_up ? options.runner_up_margin : 1.0) * beat - tail - m1 * floor;
    };
    while (bound >= floor) {
      const int at = dp.run(bound, value_cap());
      if (at < 0) break;
      const double beat_so_far = std::min({best ? best->objective : kInfinity, options.prune_above,
                                           dp.cell(at).value + m1 * dp.cell(at).worst + tail});
      for (int j = 1; j < static_cast<int>(best_of_count.size()); ++j) {
        const int of_count = dp.best_with_stages(j);
        if (of_count < 0) continue;
        const Cell& cell = dp.cell(of_count);
        const double value = cell.value + m1 * cell.worst + tail;
        const bool better = !best_of_count[j] || value < best_of_count[j]->objective;
        // Alternatives only within the margin of the best met so far (the final cut, by
        // the order's best, is no looser).
        const auto wanted = [&](double objective) {
          return alternatives && objective <= options.runner_up_margin * beat_so_far;
        };
        if (!better && !wanted(value)) continue;
        Pipeline met{order, dp.stages_from(of_count), cell.value, cell.worst, value};
        if (better) {
          // What it displaces is another arrangement of the same stage count.
          if (best_of_count[j] && wanted(best_of_count[j]->objective)) {
            others.push_back(std::move(*best_of_count[j]));
          }
          best_of_count[j] = std::move(met);
        } else {
          others.push_back(std::move(met));
        }
      }
      const Cell& found = dp.cell(at);
      const double j = found.value + m1 * found.worst + tail;
      if (!best || j < best->objective) {
        best = Pipeline{order, dp.stages_from(at), found.value, found.worst, j};
      }
      // Tighter bounds give Σ ≥ found.value and a bottleneck ≥ the floor.
      const double beat = std::min(best->objective, to_beat()) - tail;
      if (found.value + m1 * floor >= beat) break;
      // Beyond the bottleneck just found, a pipeline with Σ ≥ found.value only wins with a
      // bottleneck under (beat − found.value) / (m − 1).
      bound = std::nextafter(found.worst, -kInfinity);
      if (m1 > 0) bound = std::min(bound, std::nextafter((beat - found.value) / m1, -kInfinity));
    }
    if (best && best->objective < options.prune_above) {
      result.insert(std::upper_bound(result.begin(), result.end(), *best), *best);
      for (auto& other : best_of_count) {
        if (other && other->stages.size() != best->stages.size()) runners_up->push_back(*other);
      }
      if (alternatives) {
        const double within = options.runner_up_margin * std::min(best->objective, to_beat());
        std::vector<const Pipeline*> kept{&*best};
        for (const auto& other : best_of_count) {
          if (other) kept.push_back(&*other);
        }
        std::stable_sort(others.begin(), others.end());
        const size_t first_new = alternatives->size();
        for (auto& other : others) {
          if (other.objective > within) break;
          const auto same = [&](const Pipeline& p) { return same_stages(p, other); };
          if (std::any_of(kept.begin(), kept.end(), [&](const Pipeline* p) { return same(*p); }) ||
              std::any_of(alternatives->begin() + first_new, alternatives->end(), same)) {
            continue;
          }
          alternatives->push_back(std::move(other));
        }
      }
    }
  }
  return result;
}

std::vector<Pipeline> search_pipelines(const StageOracle& oracle, const SearchOptions& options,
                                       std::vector<Pipeline>* runners_up,
                                       std::vector<Pipeline>* alternatives) {
  if (const auto* costs = dynamic_cast<const CostOracle*>(&oracle)) {
    return search(*costs, options, runners_up, alternatives);
  }
  return search(oracle, options, runners_up, alternatives);
}

}  // namespace hyperpipe::planner
