#include "hyperpipe/planner/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/ideal_iteration.h"
#include "hyperpipe/planner/local_refinement.h"
#include "hyperpipe/planner/peer_spaces.h"
#include "hyperpipe/planner/replica_search.h"
#include "hyperpipe/planner/score_memo.h"

namespace hyperpipe::planner {
namespace {

std::string order_label(const std::vector<DeviceClass>& classes, const std::vector<int>& order) {
  std::string label;
  for (int c : order) label += (label.empty() ? "" : " → ") + classes[c].name;
  return label;
}

constexpr double kNoBound = std::numeric_limits<double>::infinity();

// No schedule of the space runs the plan faster than this: the least of each kind's
// iteration_lower_bound, hetero-1F1B's at its deepest warm-up (every group holding every
// micro-batch: the fewest round trips), each with the all-reduce after the last op and
// overlapped.
double any_schedule_bound(const cost::CostModel& costs, const plan::Plan& plan,
                          const PlanSpace& space) {
  using schedule::ScheduleKind;
  std::vector<plan::Plan> variants;
  for (auto kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe, ScheduleKind::zb_h1,
                    ScheduleKind::hetero_1f1b}) {
    if (!space.allows(kind)) continue;
    plan::Plan variant = plan;
    variant.schedule = kind;
    if (kind == ScheduleKind::hetero_1f1b) variant.warmup.assign(plan.ranks(), plan.micro_batches);
    variants.push_back(std::move(variant));
  }
  if (space.allows(ScheduleKind::interleaved)) {
    for (int chunks : kInterleaveChunks) {
      if (auto interleaved = interleave(plan.pipeline(0), chunks)) {
        plan::Plan variant = plan;
        variant.pipeline(0) = std::move(*interleaved);
        variants.push_back(std::move(variant));
      }
    }
  }
  double lowest = kNoBound;
  for (auto& variant : variants) {
    for (bool overlap : {false, true}) {
      variant.overlap_allreduce = overlap;
      lowest = std::min(lowest, iteration_lower_bound(costs, variant));
    }
  }
  return lowest;
}

// The dp (or tp) values a same-dp (same-tp) search tries: every one some class's shapes
// offer.
std::vector<int> shape_values(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
                              const PlanRequest& request, int Shape::*degree) {
  int64_t largest = 1;
  for (int64_t b : request.batch.micro_batch_sizes) largest = std::max(largest, b);
  std::vector<int> values;
  for (const auto& cls : classes) {
    for (const Shape& shape : class_shapes(cls, costs.model().config().tensor_parallel_divisor(),
                                           largest, request.space.max_tp)) {
      values.push_back(shape.*degree);
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// A fixed tp or dp that no class's shapes offer, or more device groups than the chain has
// layers or the cluster devices: refused at once, naming the flag and what it allows.
void check_fixed_shape(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
                       const PlanRequest& request) {
  const auto& space = request.space;
  const auto check = [&](int fixed, int Shape::*degree, const char* flag, const char* what) {
    if (fixed == 0) return;
    const auto offered = shape_values(costs, classes, request, degree);
    if (std::find(offered.begin(), offered.end(), fixed) != offered.end()) return;
    throw InputError(flag, std::to_string(fixed),
                     fmt::format("{} some GPU group of {} allows: {}", what, costs.cluster().name(),
                                 fmt::join(offered, ", ")));
  };
  check(space.tp, &Shape::tp, "--tp",
        "a tensor-parallel degree (a power of two within a node, dividing the model's heads)");
  check(space.dp, &Shape::dp, "--dp",
        "a data-parallel degree (at most the micro-batch's sequences)");
  const int layers = costs.model().num_layers();
  const int devices = static_cast<int>(costs.cluster().devices().size());
  // dp and tp both fixed: every stage a group of dp × tp GPUs of one class.
  if (space.dp != 0 && space.tp != 0) {
    const DeviceClass* largest = &classes.front();
    for (const auto& cls : classes) {
      if (cls.count() > largest->count()) largest = &cls;
    }
    const int group = space.dp * space.tp;
    if (group > largest->count()) {
      throw InputError(fmt::format("--dp {} --tp {}", space.dp, space.tp), "",
                       fmt::format("stages of at most {} GPUs: each stage takes dp × tp = {} "
                                   "GPUs of one type in one island, and the largest such class "
                                   "of {} has {} ({})",
                                   largest->count(), group, costs.cluster().name(),
                                   largest->count(), largest->name));
    }
    if (space.stages != 0 && space.stages * group > devices) {
      throw InputError(fmt::format("--pp {}", space.stages),
                       fmt::format("--dp {} --tp {}", space.dp, space.tp),
                       fmt::format("pp × dp × tp at most the {} GPUs of {}, not {} × {} × {} = {}",
                                   devices, costs.cluster().name(), space.stages, space.dp,
                                   space.tp, space.stages * group));
    }
  }
  if (space.stages > std::min(layers, devices)) {
    throw InputError(
        "--pp", std::to_string(space.stages),
        fmt::format("at most {} device groups: the chain has {} layers and {} {} GPUs",
                    std::min(layers, devices), layers, costs.cluster().name(), devices));
  }
}

// What the cluster's GPUs hold together for a plan's tensors, and the least and most each
// keeps back whatever the plan: the margin, and its type's reserved_memory where the
// cluster sets one, else its context and workspaces.
struct ClusterMemory {
  double usable = 0;
  double least_reserved = std::numeric_limits<double>::infinity();
  double most_reserved = 0;
};

ClusterMemory cluster_memory(const cost::CostModel& costs) {
  const auto& cluster = costs.cluster();
  ClusterMemory total;
  for (int d = 0; d < static_cast<int>(cluster.devices().size()); ++d) {
    const auto& type = cluster.device_type(d);
    const auto overheads = costs.device_overheads(type);
    const double memory = cluster.device_memory(d);
    const double reserved = memory - costs.usable_memory(memory) +
                            type.reserved_memory.value_or(overheads.context + overheads.workspace);
    total.usable += memory - reserved;
    total.most_reserved = std::max(total.most_reserved, reserved);
    total.least_reserved = std::min(total.least_reserved, reserved);
  }
  return total;
}

std::string reserved_range(const cost::CostModel& costs) {
  const ClusterMemory total = cluster_memory(costs);
  return total.most_reserved == total.least_reserved
             ? format_bytes(total.most_reserved)
             : fmt::format("{} to {}", format_bytes(total.least_reserved),
                           format_bytes(total.most_reserved));
}

// Why no plan can fit whatever its shape, if the model's weights, gradients and Adam state
// alone outweigh what all GPUs hold together: every plan keeps each of them somewhere at
// least once (tensor parallelism splits them, data parallelism copies them, a sharded
// optimizer spreads the same bytes), so the search need not run.
std::optional<std::string> total_memory_shortfall(const cost::CostModel& costs) {
  const auto& model = costs.model();
  const auto& cluster = costs.cluster();
  const auto device = device_classes(cluster).front().devices.front();
  const auto group = cost::make_device_group(cluster, {device}, 1, 1);
  const auto whole = costs.stage_memory(0, model.num_layers(), group, 1, model.config().seq_len, 1,
                                        model::Recompute::full);
  const double static_bytes = whole.weights + whole.gradients + whole.optimizer;
  const ClusterMemory total = cluster_memory(costs);
  if (static_bytes <= total.usable) return std::nullopt;
  return fmt::format(
      "no plan fits: {} needs {} for weights, gradients and Adam state, more than the {} "
      "that all {} GPUs of {} hold together ({} kept back on each)",
      model.config().name, format_bytes(static_bytes), format_bytes(total.usable),
      cluster.devices().size(), cluster.name(), reserved_range(costs));
}

// Throws the planner's refusal: why no plan fits, and the limits the request set.
[[noreturn]] void throw_infeasible(const cost::CostModel& costs, const PlanRequest& request) {
  std::string reason = infeasibility_reason(costs, request);
  const std::string limits = request.space.limits_text();
  if (!limits.empty()) reason += "; within the limits asked for (" + limits + ")";
  throw InputError("--model " + request.batch.model, "--cluster " + request.batch.cluster, reason);
}

}  // namespace

void restrict_to_framework(plan::Framework framework, PlanRequest& request) {
  const auto& traits = plan::traits(framework);
  request.batch.runtime = framework;
  if (framework == plan::Framework::hyperpipe) return;  // every plan of the space
  auto& space = request.space;
  std::vector<schedule::ScheduleKind> kinds;
  for (auto kind : traits.schedules) {
    if (space.allows(kind)) kinds.push_back(kind);
  }
  if (kinds.empty()) {
    throw InputError(
        "--schedule", space.schedules_text(),
        fmt::format("a schedule {} runs: {}", traits.display_name, plan::schedules_text(traits)));
  }
  space.schedules = kinds;
  space.same_dp = space.same_dp || traits.uniform_shape;
  space.same_tp = space.same_tp || traits.uniform_shape;
  request.replicas = request.replicas && traits.replicas;
}

std::vector<bool> optimizer_shardings(const std::string& asked, plan::Framework framework) {
  const auto& traits = plan::traits(framework);
  if (asked == "on" && !traits.shards_optimizer) {
    throw InputError("--shard-optimizer", asked,
                     fmt::format("off or auto: {} keeps the whole optimizer state on every "
                                 "data-parallel rank",
                                 traits.display_name));
  }
  if (asked == "on") return {true};
  if (asked == "off" || !traits.shards_optimizer) return {false};
  if (traits.reduce_scatters_gradients) return {true};
  return {false, true};
}

PlanResult make_plan(const cost::CostModel& costs, const PlanRequest& request) {
  const auto classes = device_classes(costs.cluster());
  check_fixed_shape(costs, classes, request);
  // Refused at once (the same message as after a search) where no shape can fit.
  if (total_memory_shortfall(costs)) throw_infeasible(costs, request);
  PlanResult result;
  const bool replicas = request.replicas && !request.space.one_pipeline();
  std::vector<std::string> phases{"search", "first pass", "schedules and refinement"};
  if (replicas) phases.push_back("replicas");
  phases.push_back("baselines");
  if (request.peers) phases.push_back("peers' spaces");
  PhaseClock clock(result.phases, phases, request.progress, request.space);
  const ScoreMemo memo(costs);  // no plan of this call simulated twice

  // 1. The search, for every micro-batch size (and, for one dp or tp on every stage, every
  // dp and tp).
  CandidateOptions options;
  options.global_batch = request.batch.global_batch;
  options.seq_len = request.batch.seq_len;
  options.micro_batch_sizes = request.batch.micro_batch_sizes;
  options.max_stages = request.space.max_stages;
  options.max_tp = request.space.max_tp;
  options.stages = request.space.stages;
  options.recompute = request.space.recompute;
  options.keep = kRescoredCandidates;
  options.every_order = request.every_order;
  // The first pass re-scores runners-up only within kRescoreMargin of the best objective.
  options.runner_up_margin = kRescoreMargin;
  options.alternatives = true;
  std::vector<CandidateSearch> searches;
  const auto values = [&](bool same, int fixed, int Shape::*degree) {
    if (fixed != 0) return std::vector<int>{fixed};
    return same ? shape_values(costs, classes, request, degree) : std::vector<int>{0};
  };
  const auto dps = values(request.space.same_dp, request.space.dp, &Shape::dp);
  const auto tps = values(request.space.same_tp, request.space.tp, &Shape::tp);
  const int shape_count = static_cast<int>(dps.size() * tps.size());
  for (int dp : dps) {
    for (int tp : tps) {
      clock.step(static_cast<int>(searches.size()), shape_count);
      options.only_dp = dp;
      options.only_tp = tp;
      searches.push_back(search_candidates(costs, classes, options));
      result.search_seconds += searches.back().seconds;
    }
  }
  clock.close("search");
  struct Found {
    const Candidate* candidate;
    const CandidateSearch* search;
  };
  std::vector<Found> candidates;
  for (const auto& search : searches) {
    for (const auto* list : {&search.candidates, &search.runners_up}) {
      for (const auto& candidate : *list) candidates.push_back({&candidate, &search});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Found& a, const Found& b) {
    return a.candidate->pipeline.objective < b.candidate->pipeline.objective;
  });

  // 2. Re-score with the simulator. The search's objective leaves out the all-reduce, the
  // optimizer, the schedule and where the devices sit, so a close runner-up may win:
  // first every candidate within kRescoreMargin of the best objective (at most
  // kFirstPassCandidates) and the best of every order and micro-batch size, under 1F1B;
  // then the kRescoredCandidates fastest of those, and each order's best, under every
  // schedule of the space.
  // The search's alternatives, apart: they are tried after the candidates' schedules and
  // refinement, so that they add to what those find and never crowd it out.
  std::vector<Found> alternatives;
  for (const auto& search : searches) {
    for (const auto& candidate : search.alternatives) alternatives.push_back({&candidate, &search});
  }
  std::stable_sort(alternatives.begin(), alternatives.end(), [](const Found& a, const Found& b) {
    return a.candidate->pipeline.objective < b.candidate->pipeline.objective;
  });
  const auto to_plan = [&](const Found& found,
                           double unless_bound_reaches) -> std::optional<ScoredPlan> {
    const auto& [candidate, search] = found;
    plan::Plan plan = request.batch.new_plan();
    try {
      plan.pipeline(0) = to_pipeline(*candidate, classes, search->shapes.at(candidate->micro_batch),
                                     request.batch.global_batch);
    } catch (const std::invalid_argument& error) {
      // The search counts devices per class; a rare mix of group sizes may not pack into
      // the nodes without splitting a group.
      log().debug("planner: skipping a candidate: {}", error.what());
      return std::nullopt;
    }
    if (!simulatable(plan)) return std::nullopt;
    if (unless_bound_reaches < kNoBound &&
        any_schedule_bound(costs, plan, request.space) >= unless_bound_reaches) {
      return std::nullopt;
    }
    ScoredPlan scored =
        score_plan(costs, std::move(plan), order_label(classes, candidate->pipeline.order));
    scored.estimate = candidate->pipeline.objective;
    if (log().should_log(spdlog::level::debug)) {  // the groups are formatted only then
      std::string groups;
      for (const auto& stage : scored.plan.stages) {
        groups += fmt::format(" {}×{} [{}, {}) from device {}", stage.dp, stage.tp,
                              stage.first_layer, stage.end_layer, stage.devices.front());
      }
      log().debug("planner: {} ({} stages, micro-batch {}): estimate {:.4f} s, 1F1B {:.4f} s{}:{}",
                  scored.label, scored.plan.stages.size(), candidate->micro_batch, scored.estimate,
                  scored.iteration_time(), scored.fits ? "" : " (does not fit)", groups);
    }
    clock.offer(scored);
    return scored;
  };
  struct FirstPass {
    ScoredPlan scored;
    bool first_of_order;
  };
  std::vector<FirstPass> first_pass;
  std::map<std::vector<int>, bool> order_seen;
  std::map<int64_t, bool> size_seen;
  int within_margin = 0;
  int looked_at = 0;
  const double margin_above =
      candidates.empty() ? 0 : kRescoreMargin * candidates.front().candidate->pipeline.objective;
  for (const Found& found : candidates) {
    clock.step(looked_at++, static_cast<int>(candidates.size()));
    const Candidate* candidate = found.candidate;
    const bool first_of_order = !order_seen[candidate->pipeline.order];
    const bool first_of_size = !size_seen[candidate->micro_batch];
    order_seen[candidate->pipeline.order] = true;
    size_seen[candidate->micro_batch] = true;
    const bool close =
        candidate->pipeline.objective <= margin_above && within_margin < kFirstPassCandidates;
    if (!close && !first_of_order && !first_of_size) continue;
    within_margin += close;
    if (auto scored = to_plan(found, kNoBound)) {
      first_pass.push_back({std::move(*scored), first_of_order});
    }
  }
  clock.close("first pass");
  std::vector<size_t> by_time(first_pass.size());
  for (size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) {
    return preferred(first_pass[a].scored, first_pass[b].scored);
  });
  // The fastest few are also refined by the simulator's neighbourhood search
  // (local_refinement.h), under 1F1B and under their best schedule.
  std::vector<ScoredPlan> searched;
  const auto schedule_and_keep = [&](const ScoredPlan& plan) -> std::optional<ScoredPlan> {
    auto scored = best_schedule(costs, plan.plan, plan.label, request.space);
    if (!scored) return std::nullopt;
    scored->estimate = plan.estimate;
    clock.offer(*scored);
    searched.push_back(*scored);
    return scored;
  };
  // Fastest per class order and stage count, so that sizes of one layout do not crowd out
  // the others.
  std::map<std::pair<std::string, size_t>, bool> layout_seen;
  int layouts = 0;
  for (size_t at = 0; at < by_time.size(); ++at) {
    clock.step(static_cast<int>(at), static_cast<int>(by_time.size()));
    const size_t rank = by_time[at];
    const auto& [first, first_of_order] = first_pass[rank];
    const bool new_layout = !layout_seen[{first.label, first.plan.stages.size()}];
    layout_seen[{first.label, first.plan.stages.size()}] = true;
    const bool fastest = new_layout && layouts < kRescoredCandidates;
    layouts += fastest;
    if (!fastest && !first_of_order) continue;
    const auto scheduled = schedule_and_keep(first);
    if (scheduled && first_of_order) result.per_order.push_back(*scheduled);
    if (!fastest) continue;
    // Where refinement moves nothing, or the schedule kept the plan as it was, the same
    // plan would be scheduled or refined twice: once is enough.
    // Merges only here, under 1F1B, where they pay most: fewer round trips for 1F1B's few
    // micro-batches in flight (local_refinement.h).
    const ScoredPlan refined = refine(costs, first, request.space, /*merges=*/true);
    if (!(refined.plan == first.plan)) schedule_and_keep(refined);
    if (scheduled) {
      searched.push_back(scheduled->plan == first.plan ? refined
                                                       : refine(costs, *scheduled, request.space));
      clock.offer(searched.back());
    }
  }
  // The alternatives within the margin that some schedule might make faster than the
  // fastest plan so far (by its lower bound, any_schedule_bound), the best few by
  // objective, under 1F1B; the fastest of those refined, then under every schedule (the
  // schedule is what may favour them; refinement first finds the split it favours).
  double fastest_so_far = kNoBound;
  for (const auto& scored : searched) {
    if (scored.fits) fastest_so_far = std::min(fastest_so_far, scored.iteration_time());
  }
  std::vector<ScoredPlan> alternatives_scored;
  for (size_t a = 0; a < alternatives.size() && a < kFirstPassAlternatives; ++a) {
    const Found& found = alternatives[a];
    if (found.candidate->pipeline.objective > margin_above) break;
    auto scored = to_plan(found, fastest_so_far);
    // Under 1F1B within kAlternativeMargin of the fastest so far: the bounds, which leave
    // out the round trips that hold back deep pipelines over slow links, let through
    // alternatives that simulate 40% slower.
    if (scored && scored->fits && scored->iteration_time() <= kAlternativeMargin * fastest_so_far) {
      alternatives_scored.push_back(std::move(*scored));
    }
  }
  std::stable_sort(alternatives_scored.begin(), alternatives_scored.end(), preferred);
  if (alternatives_scored.size() > kRescoredAlternatives) {
    alternatives_scored.resize(kRescoredAlternatives);
  }
  for (const auto& alternative : alternatives_scored) {
    log().debug("planner: refining an alternative, 1F1B {:.4f} s against {:.4f} s so far",
                alternative.iteration_time(), fastest_so_far);
    const ScoredPlan refined = refine(costs, alternative, request.space);
    if (refined.fits) fastest_so_far = std::min(fastest_so_far, refined.iteration_time());
    clock.offer(refined);
    searched.push_back(refined);
    // Only schedules that could beat the fastest so far are simulated.
    auto scheduled =
        best_schedule(costs, refined.plan, refined.label, request.space, fastest_so_far);
    if (!scheduled) continue;
    scheduled->estimate = refined.estimate;
    clock.offer(*scheduled);
    searched.push_back(std::move(*scheduled));
  }

  clock.close("schedules and refinement");
  // 3. Pipelines of different composition side by side, each with its share of the batch.
  if (replicas) {
    for (auto& scored : search_replicas(costs, classes, {request.batch, request.space})) {
      clock.offer(scored);
      result.per_order.push_back(scored);
      searched.push_back(std::move(scored));
    }
    clock.close("replicas");
    result.replica_seconds = result.phases.back().seconds;
  }

  // 4. The baselines, scored the same way.
  const auto baselines = baseline_names();
  for (size_t b = 0; b < baselines.size(); ++b) {
    clock.step(static_cast<int>(b), static_cast<int>(baselines.size()));
    if (auto baseline = best_baseline(costs, request.batch, *parse_baseline(baselines[b]))) {
      clock.offer(*baseline);
      result.baselines.push_back(std::move(*baseline));
    }
  }

  clock.close("baselines");
  result.ideal_iteration = ideal_iteration(costs, request.batch);
  if (request.peers) {
    const auto spaces = peer_spaces();
    for (size_t p = 0; p < spaces.size(); ++p) {
      clock.step(static_cast<int>(p), static_cast<int>(spaces.size()));
      if (auto peer = best_of_peer_space(costs, request.batch, spaces[p])) {
        result.peers.push_back(std::move(*peer));
      }
    }
    clock.close("peers' spaces");
  }

  // The fastest plan that fits, searched or not: the search's estimate is coarser than
  // the simulator, which has the last word.
  const ScoredPlan* best = nullptr;
  for (const auto* pool : {&searched, &result.baselines}) {
    for (const auto& scored : *pool) {
      if (scored.fits && within(scored.plan, request.space) && (!best || preferred(scored, *best)))
        best = &scored;
    }
  }
  if (!best) throw_infeasible(costs, request);
  result.best = *best;
  clock.finish();
  std::string simulated;
  for (const auto& phase : result.phases) {
    simulated +=
        fmt::format("; {} {} plans ({} ops)", phase.name, phase.simulations, phase.simulated_ops);
  }
  log().debug("planner: {} candidates, search {:.3f} s, replicas {:.3f} s{}", candidates.size(),
              result.search_seconds, result.replica_seconds, simulated);
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
    for (int tp = 1; tp <= std::min(cls.node_size, request.space.max_tp); tp *= 2) {
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
                                           largest_micro_batch, request.space.max_tp)
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
  if (auto short_of_memory = total_memory_shortfall(costs)) return *short_of_memory;
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
  const std::string reserved_text = reserved_range(costs);
  const int stages = request.space.stages != 0
                         ? request.space.stages
                         : std::min({model.num_layers(), devices, request.space.max_stages});
  if (request.space.tp != 0) widest_tp = request.space.tp;
  const double split = static_cast<double>(stages) * widest_tp;
  // A sharded optimizer's state spreads over every device at best (dp the rest).
  const bool sharded = costs.options().shard_optimizer;
  const double share = (whole.weights + whole.gradients) / split +
                       whole.optimizer / (sharded ? static_cast<double>(devices) : split);
  return fmt::format(
      "no plan fits: {} needs {} for weights, gradients and Adam state; over at most {} "
      "stage(s) with tensor parallelism {}{} that is at least {} per GPU (its largest layer "
      "alone {} over tp {}), plus {} kept back and the activations of the micro-batches in "
      "flight; the largest device has {} (global batch {})",
      model.config().name, format_bytes(static_bytes), stages, widest_tp,
      sharded ? fmt::format(" and the optimizer state sharded over all {} GPUs", devices) : "",
      format_bytes(share), format_bytes(largest_layer / widest_tp), widest_tp, reserved_text,
      format_bytes(largest_device), request.batch.global_batch);
}

}  // namespace hyperpipe::planner
