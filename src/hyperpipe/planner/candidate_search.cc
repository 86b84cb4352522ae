#include "hyperpipe/planner/candidate_search.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>

#include "hyperpipe/planner/cost_oracle.h"

namespace hyperpipe::planner {

CandidateSearch search_candidates(const cost::CostModel& costs,
                                  const std::vector<DeviceClass>& classes,
                                  const CandidateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t seq = costs.model().config().sequence_length(options.seq_len);
  CandidateSearch result;

  // Per-range costs, shared by all bounds and orders, once per micro-batch size, and a
  // lower bound that skips a size which cannot beat what is found already. (Searching
  // the sizes by that bound instead of in increasing order measured slower.)
  struct Size {
    int64_t micro_batch;
    std::unique_ptr<CostOracle> oracle;
    double bound;
  };
  std::vector<Size> sizes;
  for (int64_t b : options.micro_batch_sizes) {
    auto oracle = std::make_unique<CostOracle>(costs, classes, b, seq, options.max_tp,
                                               options.only_dp, options.only_tp);
    const int m = static_cast<int>(options.global_batch / b);
    const double bound = objective_lower_bound(*oracle, m);
    result.shapes[b] = oracle->all_shapes();
    sizes.push_back({b, std::move(oracle), bound});
  }

  // A quick probe first: the fastest order alone for each size, most promising sizes first
  // (by their lower bound), whose pipelines bound the full searches below from the start. A
  // size whose bound cannot enter the best few probed so far is not probed: the full search
  // skips it by the same rule.
  const auto search_options = [&](int64_t micro_batch) {
    SearchOptions search;
    search.micro_batches = static_cast<int>(options.global_batch / micro_batch);
    search.max_stages = options.max_stages;
    search.stages = options.stages;
    search.recompute = options.recompute;
    search.keep = options.keep;
    search.per_order = options.every_order;
    search.runner_up_margin = options.runner_up_margin;
    return search;
  };
  auto& found = result.candidates;
  const auto kth_best = [&]() {
    if (static_cast<int>(found.size()) < options.keep)
      return std::numeric_limits<double>::infinity();
    std::vector<double> objectives;
    objectives.reserve(found.size());
    for (const auto& c : found) objectives.push_back(c.pipeline.objective);
    std::nth_element(objectives.begin(), objectives.begin() + options.keep - 1, objectives.end());
    return objectives[options.keep - 1];
  };
  if (!options.every_order) {
    std::vector<const Size*> by_bound;
    for (const Size& size : sizes) by_bound.push_back(&size);
    std::stable_sort(by_bound.begin(), by_bound.end(),
                     [](const Size* a, const Size* b) { return a->bound < b->bound; });
    for (const Size* size : by_bound) {
      SearchOptions probe = search_options(size->micro_batch);
      probe.keep = 1;
      probe.per_order = false;
      probe.max_orders = 1;
      probe.prune_above = kth_best();
      if (size->bound >= probe.prune_above) continue;
      for (auto& pipeline : search_pipelines(*size->oracle, probe)) {
        found.push_back({std::move(pipeline), size->micro_batch});
      }
    }
  }
  const auto seen = [&](int64_t micro_batch, const std::vector<int>& order) {
    for (const auto& c : found) {
      if (c.micro_batch == micro_batch && c.pipeline.order == order) return true;
    }
    return false;
  };

  for (const Size& size : sizes) {
    SearchOptions search = search_options(size.micro_batch);
    if (!options.every_order && static_cast<int>(found.size()) >= options.keep) {
      // Only what could enter the best few of all sizes so far.
      search.prune_above = kth_best();
      if (size.bound >= search.prune_above) continue;
    }
    std::vector<Pipeline> runners_up;
    std::vector<Pipeline> alternatives;
    for (auto& pipeline : search_pipelines(*size.oracle, search, &runners_up,
                                           options.alternatives ? &alternatives : nullptr)) {
      if (seen(size.micro_batch, pipeline.order)) continue;  // the probe's, already kept
      found.push_back({std::move(pipeline), size.micro_batch});
    }
    for (auto& pipeline : runners_up) {
      result.runners_up.push_back({std::move(pipeline), size.micro_batch});
    }
    for (auto& pipeline : alternatives) {
      result.alternatives.push_back({std::move(pipeline), size.micro_batch});
    }
  }
  for (auto* list : {&result.candidates, &result.runners_up, &result.alternatives}) {
    std::stable_sort(list->begin(), list->end(), [](const Candidate& a, const Candidate& b) {
      return a.pipeline.objective < b.pipeline.objective;
    });
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

plan::Pipeline to_pipeline(const Candidate& candidate, const std::vector<DeviceClass>& classes,
                           const std::vector<std::vector<Shape>>& shapes, int64_t samples) {
  plan::Pipeline plan;
  plan.micro_batch_size = candidate.micro_batch;
  plan.micro_batches = static_cast<int>(samples / candidate.micro_batch);
  const auto& stages = candidate.pipeline.stages;
  // Devices per class, stages of a class in pipeline order.
  std::map<int, std::vector<size_t>> by_class;
  for (size_t s = 0; s < stages.size(); ++s) by_class[stages[s].cls].push_back(s);
  std::vector<std::vector<int>> devices(stages.size());
  for (const auto& [cls, members] : by_class) {
    std::vector<int> sizes;
    for (size_t s : members) sizes.push_back(shapes[cls][stages[s].shape].size());
    const auto groups = assign_devices(classes[cls], sizes);
    for (size_t i = 0; i < members.size(); ++i) devices[members[i]] = groups[i];
  }
  for (size_t s = 0; s < stages.size(); ++s) {
    const Shape& shape = shapes[stages[s].cls][stages[s].shape];
    plan.stages.push_back(
        {stages[s].first, stages[s].end, devices[s], shape.dp, shape.tp, stages[s].recompute});
  }
  return plan;
}

}  // namespace hyperpipe::planner
