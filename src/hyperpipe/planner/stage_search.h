// Stage construction: the pipeline with the smallest estimated iteration time
//   J = Σ_s (τ_s + 2·λ_s) + (m − 1) · max_s max(τ_s, λ_s) + T(first class, last class)
// where τ_s is stage s's time per micro-batch plus 1/m of its epilogue (the gradient
// all-reduce and optimizer step it runs once per iteration), λ_s its transfer to the next stage
// (activation forward, gradient back) and T the oracle's tail_time (the tied embedding's
// sum between the ends, constant per class order), over this plan space:
//   * an order of device classes, each used by one or more consecutive stages (every
//     order of every subset of classes is tried: a slow class may be left out);
//   * each stage a contiguous layer range and a device group of one class, in one of the
//     class's shapes (dp × tp), within the class's device count;
//   * each stage the cheapest recomputation that fits its memory with the micro-batches it
//     keeps in flight under 1F1B (S − s).
// Dynamic programming in the style of Alpa's stage construction, extended to several
// device classes as in HARP (arXiv 2509.24859): for a bound t on every τ and λ, a DP over
// (first layer, class, devices used in it, stages after) minimises Σ; bounds are visited
// from the loosest that can still win down, each below both the last solution's
// bottleneck and what a pipeline with at least its Σ could afford, and the sweep stops
// when no tighter bound can win. Orders whose cheap lower bound (one fastest pass plus
// (m − 1) × the device-weighted average stage time) cannot win are not searched.
#pragma once

#include <limits>
#include <optional>
#include <vector>

#include "hyperpipe/planner/stage_oracle.h"

namespace hyperpipe::planner {

struct StageChoice {
  int cls = 0;
  int shape = 0;
  int first = 0;
  int end = 0;
  model::Recompute recompute = model::Recompute::none;
  double time = 0;        // τ: compute per micro-batch plus 1/m of the epilogue
  double link_after = 0;  // λ to the next stage (0 for the last)
};

struct Pipeline {
  std::vector<int> order;  // classes along the pipeline
  std::vector<StageChoice> stages;
  double sum = 0;         // Σ (τ + 2λ)
  double bottleneck = 0;  // max over τ and λ
  double objective = 0;   // J, plus the oracle's tail_time for the order

  bool operator<(const Pipeline& other) const { return objective < other.objective; }
};

struct SearchOptions {
  int micro_batches = 1;
  int max_stages = 32;
  // Exactly this many stages (0: any number up to max_stages).
  int stages = 0;
  // Every stage this recomputation (unset: each the least that fits).
  std::optional<model::Recompute> recompute = std::nullopt;
  // How many class orders' best pipelines must be exact: orders that cannot beat the
  // keep-th best found so far are pruned.
  int keep = 1;
  // Search every order to its best (for explanations), without pruning across orders.
  bool per_order = false;
  // Only pipelines below this objective are wanted (e.g. the best of another
  // micro-batch size).
  double prune_above = std::numeric_limits<double>::infinity();
  // Search only the first this many orders, fastest classes first (0: all). A quick probe
  // whose result bounds a full search.
  int max_orders = 0;
  // Runners-up (search_pipelines' `runners_up`) are wanted only within this factor of the
  // objective to beat; a partial pipeline that cannot finish within it is dropped early
  // (infinity: every runner-up met, as without the factor).
  double runner_up_margin = std::numeric_limits<double>::infinity();
};

// The best pipeline of each class order that was not pruned, best first: the first
// `keep` are the best `keep` orders' best pipelines exactly (all orders with per_order).
// Deterministic: ties go to the order enumerated first.
// With `runners_up`, also appends, for each order kept, the best pipeline of every other
// stage count met on the way (not always the best of that count: the sweep stops when no
// pipeline can beat the order's best), for callers that re-score with a finer model.
// With `alternatives` (only with `runners_up`), also appends every other distinct pipeline
// the sweep found best of its stage count at some bound, within the runner-up margin, best
// first: other arrangements of group sizes and layers that the objective ranks lower but a
// schedule may favour (an interleaved schedule's bubble shrinks with fewer, larger stages
// where the objective sees none).
std::vector<Pipeline> search_pipelines(const StageOracle& oracle, const SearchOptions& options,
                                       std::vector<Pipeline>* runners_up = nullptr,
                                       std::vector<Pipeline>* alternatives = nullptr);

// A lower bound on the objective of any pipeline for this oracle: one pass through the
// layers at their fastest plus (m − 1) × (device-time of all layers at their cheapest) ÷
// (devices), minimised over class orders. Cheap; lets callers skip a micro-batch size.
double objective_lower_bound(const StageOracle& oracle, int micro_batches);

// J of a pipeline's stages (used by tests and baselines to score by the same function).
double objective(const std::vector<StageChoice>& stages, int micro_batches);

}  // namespace hyperpipe::planner
