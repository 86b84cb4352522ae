// Stage construction: the pipeline with the smallest estimated iteration time
//   J = Σ_s (τ_s + 2·λ_s) + (m − 1) · max_s max(τ_s, λ_s)
// where τ_s is stage s's time per micro-batch and λ_s its transfer to the next stage
// (activation forward, gradient back), over this plan space:
//   * an order of device classes, each used by one or more consecutive stages (every
//     order of every subset of classes is tried: a slow class may be left out);
//   * each stage a contiguous layer range and a device group of one class, in one of the
//     class's shapes (dp × tp), within the class's device count;
//   * each stage the cheapest recomputation that fits its memory with the micro-batches it
//     keeps in flight under 1F1B (S − s).
// Dynamic programming in the style of Alpa's stage construction, extended to several
// device classes as in HARP (arXiv 2509.24859): for a bound t on every τ and λ, a DP over
// (first layer, class, devices used in it, stages after) minimises Σ; bounds are visited
// from the loosest down, each just below the last solution's bottleneck, and the sweep
// stops when no tighter bound can win.
#pragma once

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
  double time = 0;        // τ
  double link_after = 0;  // λ to the next stage (0 for the last)
};

struct Pipeline {
  std::vector<int> order;  // classes along the pipeline
  std::vector<StageChoice> stages;
  double sum = 0;         // Σ (τ + 2λ)
  double bottleneck = 0;  // max over τ and λ
  double objective = 0;   // J

  bool operator<(const Pipeline& other) const { return objective < other.objective; }
};

struct SearchOptions {
  int micro_batches = 1;
  int max_stages = 32;
};

// The best pipeline for each class order that has a feasible one, best first. Ties are
// broken by the order of enumeration, so the result is deterministic.
std::vector<Pipeline> search_pipelines(const StageOracle& oracle, const SearchOptions& options);

// J of a pipeline's stages (used by tests and baselines to score by the same function).
double objective(const std::vector<StageChoice>& stages, int micro_batches);

}  // namespace hyperpipe::planner
