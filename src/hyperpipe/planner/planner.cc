#include "hyperpipe/planner/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/replica_search.h"

namespace hyperpipe::planner {
namespace {

std::string order_label(const std::vector<DeviceClass>& classes, const std::vector<int>& order) {
  std::string label;
  for (int c : order) label += (label.empty() ? "" : " → ") + classes[c].name;
  return label;
}

}  // namespace

PlanResult make_plan(const cost::CostModel& costs, const PlanRequest& request) {
  const auto classes = device_classes(costs.cluster());
  PlanResult result;

  // 1. The search, for every micro-batch size.
  CandidateOptions options;
  options.global_batch = request.batch.global_batch;
  options.seq_len = request.batch.seq_len;
  options.micro_batch_sizes = request.batch.micro_batch_sizes;
  options.max_stages = request.max_stages;
  options.max_tp = request.max_tp;
  options.keep = kRescoredCandidates;
  options.every_order = request.every_order;
  CandidateSearch search = search_candidates(costs, classes, options);
  result.search_seconds = search.seconds;
  const auto& candidates = search.candidates;
  auto& shapes = search.shapes;

  // 2. Re-score the best few, and the best of every order, with the simulator.
  std::map<std::vector<int>, bool> order_seen;
  std::vector<ScoredPlan> searched;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& candidate = candidates[i];
    const bool first_of_order = !order_seen[candidate.pipeline.order];
    order_seen[candidate.pipeline.order] = true;
    if (static_cast<int>(i) >= kRescoredCandidates && !first_of_order) continue;
    plan::Plan plan;
    plan.model = request.batch.model;
    plan.cluster = request.batch.cluster;
    plan.seq_len = request.batch.seq_len;
    try {
      plan.pipeline(0) = to_pipeline(candidate, classes, shapes[candidate.micro_batch],
                                     request.batch.global_batch);
    } catch (const std::invalid_argument& error) {
      // The search counts devices per class; a rare mix of group sizes may not pack into
      // the nodes without splitting a group.
      log().debug("planner: skipping a candidate: {}", error.what());
      continue;
    }
    if (!simulatable(plan)) continue;
    ScoredPlan scored = best_schedule(costs, plan, order_label(classes, candidate.pipeline.order));
    scored.estimate = candidate.pipeline.objective;
    if (first_of_order) result.per_order.push_back(scored);
    searched.push_back(std::move(scored));
  }

  // 3. Pipelines of different composition side by side, each with its share of the batch.
  if (request.replicas) {
    const auto start = std::chrono::steady_clock::now();
    for (auto& scored :
         search_replicas(costs, classes, {request.batch, request.max_stages, request.max_tp})) {
      result.per_order.push_back(scored);
      searched.push_back(std::move(scored));
    }
    result.replica_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // 4. The baselines, scored the same way.
  for (const auto& name : baseline_names()) {
    if (auto baseline = best_baseline(costs, request.batch, *parse_baseline(name))) {
      result.baselines.push_back(std::move(*baseline));
    }
  }

  // The fastest plan that fits, searched or not: the search's estimate is coarser than
  // the simulator, which has the last word.
  const ScoredPlan* best = nullptr;
  for (const auto* pool : {&searched, &result.baselines}) {
    for (const auto& scored : *pool) {
      if (scored.fits && (!best || preferred(scored, *best))) best = &scored;
    }
  }
  if (!best) {
    throw InputError("--model " + request.batch.model, "--cluster " + request.batch.cluster,
                     infeasibility_reason(costs, request));
  }
  result.best = *best;
  log().debug("planner: {} candidates, search {:.3f} s, replicas {:.3f} s", candidates.size(),
              result.search_seconds, result.replica_seconds);
  return result;
}

std::string infeasibility_reason(const cost::CostModel& costs, const PlanRequest& request) {
  const auto& model = costs.model();
  const auto& cluster = costs.cluster();
  const auto classes = device_classes(cluster);
  double largest_device = 0;
  int widest_tp = 1;
  for (const auto& cls : classes) {
    largest_device = std::max(largest_device, cluster.device_memory(cls.devices.front()));
    for (int tp = 1; tp <= cls.node_size; tp *= 2) {
      if (cls.node_size % tp == 0 && model.config().tensor_parallel_divisor() % tp == 0) {
        widest_tp = std::max(widest_tp, tp);
      }
    }
  }
  // Before memory: a class whose smallest group (a whole node past
  // kSubNodeGroupsUpToNodes nodes) needs more data-parallel ranks than a micro-batch has
  // sequences hosts no stage at all.
  int64_t largest_micro_batch = 1;
  for (int64_t b : request.batch.micro_batch_sizes)
    largest_micro_batch = std::max(largest_micro_batch, b);
  bool any_shape = false;
  for (const auto& cls : classes) {
    any_shape = any_shape || !class_shapes(cls, model.config().tensor_parallel_divisor(),
                                           largest_micro_batch, request.max_tp)
                                  .empty();
  }
  if (!any_shape) {
    const auto& cls = classes.front();
    return fmt::format(
        "no device group is valid: classes of more than {} nodes are used in whole nodes "
        "({} GPUs in {}), split as data parallel × tensor parallel with tp at most {} for "
        "this model, so each needs more data-parallel ranks than the largest micro-batch "
        "has sequences ({}, global batch {}); raise --global-batch",
        kSubNodeGroupsUpToNodes, cls.node_size, cls.name, widest_tp, largest_micro_batch,
        request.batch.global_batch);
  }
  const auto group = cost::make_device_group(cluster, {classes.front().devices.front()}, 1, 1);
  const auto whole = costs.stage_memory(0, model.num_layers(), group, 1, model.config().seq_len, 1,
                                        model::Recompute::full);
  const double static_bytes = whole.weights + whole.gradients + whole.optimizer;
  double largest_layer = 0;
  for (int l = 0; l < model.num_layers(); ++l) {
    const auto one =
        costs.stage_memory(l, l + 1, group, 1, model.config().seq_len, 1, model::Recompute::full);
    largest_layer = std::max(largest_layer, one.weights + one.gradients + one.optimizer);
  }
  const int devices = static_cast<int>(cluster.devices().size());
  double total_memory = 0;
  for (int d = 0; d < devices; ++d) {
    total_memory += cluster.device_memory(d) - costs.options().reserved_memory_bytes;
  }
  if (static_bytes > total_memory) {
    return fmt::format(
        "no plan fits: {} needs {} for weights, gradients and Adam state, more than the {} "
        "that all {} GPUs of {} hold together ({} reserved on each)",
        model.config().name, format_bytes(static_bytes), format_bytes(total_memory), devices,
        cluster.name(), format_bytes(costs.options().reserved_memory_bytes));
  }
  const int stages = std::min(model.num_layers(), devices);
  const double share = static_bytes / (static_cast<double>(stages) * widest_tp);
  return fmt::format(
      "no plan fits: {} needs {} for weights, gradients and Adam state; over at most {} stages "
      "with tensor parallelism {} that is at least {} per GPU (its largest layer alone {} "
      "over tp {}), plus {} reserved and the activations of the micro-batches in flight; the "
      "largest device has {} (global batch {})",
      model.config().name, format_bytes(static_bytes), stages, widest_tp, format_bytes(share),
      format_bytes(largest_layer / widest_tp), widest_tp,
      format_bytes(costs.options().reserved_memory_bytes), format_bytes(largest_device),
      request.batch.global_batch);
}

}  // namespace hyperpipe::planner
