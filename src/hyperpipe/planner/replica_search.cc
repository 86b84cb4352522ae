#include "hyperpipe/planner/replica_search.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "hyperpipe/common/log.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

using Split = std::vector<std::vector<int>>;

// Every partition of 0 … n − 1 into two or more groups (restricted growth strings:
// element i joins one of the groups so far or opens the next).
void every_partition(int n, int i, std::vector<int>& group_of, int groups,
                     std::vector<Split>& out) {
  if (i == n) {
    if (groups < 2) return;
    Split split(groups);
    for (int e = 0; e < n; ++e) split[group_of[e]].push_back(e);
    out.push_back(std::move(split));
    return;
  }
  for (int g = 0; g <= groups; ++g) {
    group_of[i] = g;
    every_partition(n, i + 1, group_of, std::max(groups, g + 1), out);
  }
}

// Classes grouped by a key (island or GPU type), groups in order of first appearance.
template <typename Key>
Split split_by(const std::vector<DeviceClass>& classes, Key key) {
  Split split;
  std::vector<decltype(key(classes.front()))> keys;
  for (int c = 0; c < static_cast<int>(classes.size()); ++c) {
    const auto it = std::find(keys.begin(), keys.end(), key(classes[c]));
    if (it == keys.end()) {
      keys.push_back(key(classes[c]));
      split.push_back({c});
    } else {
      split[it - keys.begin()].push_back(c);
    }
  }
  return split;
}

// One pipeline's best plan for a share of the batch, from the search over its classes.
struct GroupPipeline {
  plan::Pipeline pipeline;
  std::string label;  // its class order
  double objective = 0;
};

// The searches of one group of classes, remembered per share.
class GroupSearch {
 public:
  GroupSearch(const cost::CostModel& costs, std::vector<DeviceClass> classes,
              const ReplicaOptions& options)
      : costs_(costs), classes_(std::move(classes)), options_(options) {}

  const std::optional<GroupPipeline>& best(int64_t share) {
    const auto found = cache_.find(share);
    if (found != cache_.end()) return found->second;
    return cache_[share] = search(share);
  }

 private:
  std::optional<GroupPipeline> search(int64_t share) const {
    CandidateOptions candidate_options;
    candidate_options.global_batch = share;
    candidate_options.seq_len = options_.batch.seq_len;
    candidate_options.micro_batch_sizes = micro_batch_sizes(share);
    candidate_options.max_stages = options_.space.max_stages;
    candidate_options.max_tp = options_.space.max_tp;
    candidate_options.recompute = options_.space.recompute;
    candidate_options.keep = 1;
    candidate_options.runner_up_margin = 1;  // only the best is used here
    const CandidateSearch search = search_candidates(costs_, classes_, candidate_options);
    for (const auto& candidate : search.candidates) {
      try {
        GroupPipeline result;
        result.pipeline =
            to_pipeline(candidate, classes_, search.shapes.at(candidate.micro_batch), share);
        for (int c : candidate.pipeline.order) {
          result.label += (result.label.empty() ? "" : " → ") + classes_[c].name;
        }
        result.objective = candidate.pipeline.objective;
        return result;
      } catch (const std::invalid_argument& error) {
        log().debug("replica search: skipping a candidate: {}", error.what());
      }
    }
    return std::nullopt;
  }

  const cost::CostModel& costs_;
  std::vector<DeviceClass> classes_;
  const ReplicaOptions& options_;
  std::map<int64_t, std::optional<GroupPipeline>> cache_;
};

// When each pipeline of a simulated plan has reduced its gradients: the latest of its ranks.
std::vector<double> pipeline_finish(const sim::PlanSimulation& simulation) {
  std::vector<double> finish(simulation.pipelines(), 0.0);
  for (int p = 0; p < simulation.pipelines(); ++p) {
    const int end = p + 1 < simulation.pipelines()
                        ? simulation.first_rank[p + 1]
                        : static_cast<int>(simulation.output.ranks.size());
    for (int r = simulation.first_rank[p]; r < end; ++r) {
      finish[p] = std::max(finish[p], simulation.output.ranks[r].reduced);
    }
  }
  return finish;
}

// The best plan of one split: shares first in proportion to each pipeline's speed at an
// even share, then moved a granule at a time from the pipeline that finishes last to the
// one that finishes first while the simulated iteration (under 1F1B) improves; then each
// pipeline's best schedule.
std::optional<ScoredPlan> best_of_split(const cost::CostModel& costs,
                                        const std::vector<DeviceClass>& classes, const Split& split,
                                        const ReplicaOptions& options) {
  const int pipelines = static_cast<int>(split.size());
  const int64_t batch = options.batch.global_batch;
  const int64_t granule = share_granule(batch, pipelines);
  const int64_t granules = batch / granule;
  if (granules < pipelines) return std::nullopt;
  std::vector<GroupSearch> groups;
  for (const auto& members : split) {
    std::vector<DeviceClass> group;
    group.reserve(members.size());
    for (int c : members) group.push_back(classes[c]);
    groups.emplace_back(costs, std::move(group), options);
  }

  const int64_t even = std::max<int64_t>(1, granules / pipelines) * granule;
  std::vector<double> rates;
  for (auto& group : groups) {
    const auto& found = group.best(even);
    if (!found) return std::nullopt;  // this group cannot hold the model
    rates.push_back(static_cast<double>(even) / found->objective);
  }

  const auto evaluate = [&](const std::vector<int64_t>& shares) -> std::optional<ScoredPlan> {
    plan::Plan plan = options.batch.new_plan();
    std::string label;
    double estimate = 0;  // the slowest pipeline's, without the sum across pipelines
    for (int p = 0; p < pipelines; ++p) {
      const auto& found = groups[p].best(shares[p]);
      if (!found) return std::nullopt;
      estimate = std::max(estimate, found->objective);
      if (p == 0) {
        plan.pipeline(0) = found->pipeline;
      } else {
        plan.replicas.push_back(found->pipeline);
      }
      label += (p == 0 ? "" : " ‖ ") + found->label;
    }
    if (!simulatable(plan)) return std::nullopt;
    ScoredPlan scored = score_plan(costs, plan, label);
    scored.estimate = estimate;
    return scored;
  };

  std::vector<int64_t> shares = proportional_shares(rates, batch, granule);
  std::optional<ScoredPlan> best = evaluate(shares);
  for (int move = 0; best && move < kShareMoves; ++move) {
    const auto finish = pipeline_finish(best->simulation);
    const auto slowest = std::max_element(finish.begin(), finish.end()) - finish.begin();
    const auto fastest = std::min_element(finish.begin(), finish.end()) - finish.begin();
    if (slowest == fastest || shares[slowest] <= granule) break;
    std::vector<int64_t> moved = shares;
    moved[slowest] -= granule;
    moved[fastest] += granule;
    auto candidate = evaluate(moved);
    if (!candidate || !preferred(*candidate, *best)) break;
    shares = std::move(moved);
    best = std::move(candidate);
  }
  if (!best) return std::nullopt;
  auto scheduled = best_schedule(costs, best->plan, best->label, options.space);
  if (scheduled) scheduled->estimate = best->estimate;
  return scheduled;
}

}  // namespace

std::vector<std::vector<std::vector<int>>> class_splits(const std::vector<DeviceClass>& classes) {
  const int n = static_cast<int>(classes.size());
  int gpus = 0;
  for (const auto& cls : classes) gpus += cls.count();
  std::vector<Split> splits;
  if (n <= kEverySplitUpToClasses && gpus <= kEverySplitUpToGpus) {
    std::vector<int> group_of(n, 0);
    if (n > 0) every_partition(n, 1, group_of, 1, splits);
    return splits;
  }
  for (Split split : {split_by(classes, [](const DeviceClass& c) { return c.island; }),
                      split_by(classes, [](const DeviceClass& c) { return c.gpu_type; })}) {
    if (split.size() >= 2 && std::find(splits.begin(), splits.end(), split) == splits.end()) {
      splits.push_back(std::move(split));
    }
  }
  return splits;
}

int64_t share_granule(int64_t global_batch, int pipelines) {
  int64_t granule = 1;
  while (global_batch % (granule * 2) == 0 &&
         global_batch / (granule * 2) >= kGranulesPerPipeline * pipelines) {
    granule *= 2;
  }
  return granule;
}

std::vector<int64_t> proportional_shares(const std::vector<double>& rates, int64_t global_batch,
                                         int64_t granule) {
  const int n = static_cast<int>(rates.size());
  const int64_t granules = global_batch / granule;
  if (granules < n) return {};
  // One granule each, the rest by largest remainder (Hamilton's method).
  const double total_rate = std::accumulate(rates.begin(), rates.end(), 0.0);
  const int64_t spare = granules - n;
  std::vector<int64_t> counts(n, 1);
  std::vector<double> remainder(n);
  int64_t given = 0;
  for (int p = 0; p < n; ++p) {
    const double exact = static_cast<double>(spare) * rates[p] / total_rate;
    const auto whole = static_cast<int64_t>(exact);
    counts[p] += whole;
    given += whole;
    remainder[p] = exact - static_cast<double>(whole);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return remainder[a] > remainder[b]; });
  for (int i = 0; given < spare; ++i, ++given) ++counts[order[i % n]];
  std::vector<int64_t> shares;
  shares.reserve(counts.size());
  for (int64_t count : counts) shares.push_back(count * granule);
  return shares;
}

std::vector<ScoredPlan> search_replicas(const cost::CostModel& costs,
                                        const std::vector<DeviceClass>& classes,
                                        const ReplicaOptions& options) {
  std::vector<ScoredPlan> plans;
  for (const auto& split : class_splits(classes)) {
    if (auto best = best_of_split(costs, classes, split, options)) {
      plans.push_back(std::move(*best));
    }
  }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const ScoredPlan& a, const ScoredPlan& b) { return preferred(a, b); });
  return plans;
}

}  // namespace hyperpipe::planner
