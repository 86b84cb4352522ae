// Step one of planning: the stage-construction search over every micro-batch size, each
// pruned by the best pipelines the sizes before it found.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/planner/stage_search.h"

namespace hyperpipe::planner {

struct Candidate {
  Pipeline pipeline;
  int64_t micro_batch = 1;
};

struct CandidateSearch {
  std::vector<Candidate> candidates;  // best objective first
  // Other stage counts' best pipelines met by the searches (search_pipelines), best first.
  std::vector<Candidate> runners_up;
  // With CandidateOptions::alternatives: other arrangements the searches met, best first.
  std::vector<Candidate> alternatives;
  // The shapes each micro-batch size's search used, per class (pipelines index them).
  std::map<int64_t, std::vector<std::vector<Shape>>> shapes;
  double seconds = 0;
};

struct CandidateOptions {
  int64_t global_batch = 1;
  int64_t seq_len = 0;  // 0: the model's
  std::vector<int64_t> micro_batch_sizes;
  int max_stages = 32;
  int max_tp = std::numeric_limits<int>::max();              // tensor parallelism at most this
  int only_dp = 0;                                           // every stage this dp (0: any)
  int only_tp = 0;                                           // every stage this tp (0: any)
  int stages = 0;                                            // exactly this many stages (0: any)
  std::optional<model::Recompute> recompute = std::nullopt;  // every stage this one (unset: least)
  int keep = 3;              // exact best pipelines wanted over all sizes
  bool every_order = false;  // every class order's best, no pruning across orders
  // Runners-up only within this factor of the best (SearchOptions::runner_up_margin).
  double runner_up_margin = std::numeric_limits<double>::infinity();
  bool alternatives = false;  // also collect search_pipelines' alternatives
};

CandidateSearch search_candidates(const cost::CostModel& costs,
                                  const std::vector<DeviceClass>& classes,
                                  const CandidateOptions& options);

// The candidate as a plan's pipeline running `samples` sequences per iteration: device
// ids handed out per class (assign_devices). `classes` and `shapes` are those the search
// used. Throws std::invalid_argument when a class's groups do not pack into its nodes.
plan::Pipeline to_pipeline(const Candidate& candidate, const std::vector<DeviceClass>& classes,
                           const std::vector<std::vector<Shape>>& shapes, int64_t samples);

}  // namespace hyperpipe::planner
