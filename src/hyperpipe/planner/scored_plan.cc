#include "hyperpipe/planner/scored_plan.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/common/limits.h"
#include "hyperpipe/cost/device_group.h"
#include "hyperpipe/planner/score_memo.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::planner {

bool simulatable(const plan::Plan& plan) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    // About three ops (F, B or BW, a transfer) per stage and micro-batch.
    const auto& pipeline = plan.pipeline(p);
    if (int64_t{3} * static_cast<int64_t>(pipeline.stages.size()) * pipeline.micro_batches >
        kMaxScheduleOps) {
      return false;
    }
  }
  return true;
}

namespace {

// A framework with one recomputation flag for the whole run recomputes on every stage as
// much as the stage that needs most (whole layers where it recomputes nothing less).
void recompute_alike(plan::Plan& plan) {
  const bool selective = plan::traits(plan.runtime).selective_recompute;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    auto& stages = plan.pipeline(p).stages;
    model::Recompute most = model::Recompute::none;
    for (const auto& stage : stages) most = std::max(most, stage.recompute);
    if (most == model::Recompute::selective && !selective) most = model::Recompute::full;
    for (auto& stage : stages) stage.recompute = most;
  }
}

// Per thread, so that plans searched side by side count apart.
thread_local SimulationTally tally;

}  // namespace

bool cannot_fit(const cost::CostModel& costs, plan::Plan plan) {
  if (plan::traits(plan.runtime).uniform_recompute) recompute_alike(plan);
  return sim::overflows_before_any_backward(costs, plan);
}

const SimulationTally& simulation_tally() {
  return tally;
}

ScoredPlan score_plan(const cost::CostModel& costs, plan::Plan plan, std::string label) {
  if (plan::traits(plan.runtime).uniform_recompute) recompute_alike(plan);
  ScoreMemo* memo = ScoreMemo::active(costs);
  if (memo) {
    if (const ScoredPlan* known = memo->find(plan)) {
      ScoredPlan scored = *known;
      scored.label = std::move(label);
      scored.estimate = 0;
      return scored;
    }
  }
  ScoredPlan scored;
  scored.label = std::move(label);
  // Candidates are compared by their figures; none of them is drawn.
  sim::SimOptions options;
  options.timeline = false;
  scored.simulation = sim::simulate_plan(costs, plan, options);
  scored.plan = std::move(plan);
  scored.fits = true;
  const auto& ranks = scored.simulation.output.ranks;
  for (size_t r = 0; r < ranks.size(); ++r) {
    scored.fits = scored.fits && ranks[r].peak_memory_bytes <= scored.simulation.memory_limit[r];
  }
  ++tally.simulations;
  tally.simulated_ops += static_cast<int64_t>(scored.simulation.output.simulated_ops);
  if (memo) memo->remember(scored);
  return scored;
}

bool preferred(const ScoredPlan& a, const ScoredPlan& b) {
  if (a.fits != b.fits) return a.fits;
  return a.iteration_time() < b.iteration_time();
}

std::optional<plan::Pipeline> interleave(const plan::Pipeline& plan, int chunks) {
  const int groups = static_cast<int>(plan.stages.size());
  if (plan.chunks != 1 || chunks < 2 || groups < 2) return std::nullopt;
  // Layers of chunk c of group r: the group's layers split as evenly as possible.
  std::vector<std::vector<int>> sizes(groups);
  for (int r = 0; r < groups; ++r) {
    const int layers = plan.stages[r].end_layer - plan.stages[r].first_layer;
    if (layers < chunks) return std::nullopt;
    for (int c = 0; c < chunks; ++c) sizes[r].push_back(layers / chunks + (c < layers % chunks));
  }
  plan::Pipeline result = plan;
  result.schedule = schedule::ScheduleKind::interleaved;
  result.chunks = chunks;
  result.warmup.clear();
  result.stages.clear();
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    for (int r = 0; r < groups; ++r) {
      plan::StagePlan stage = plan.stages[r];
      stage.first_layer = first;
      stage.end_layer = first + sizes[r][c];
      first = stage.end_layer;
      result.stages.push_back(stage);
    }
  }
  return result;
}

std::vector<plan::Pipeline> schedule_variants(const ScoredPlan& scored, int p,
                                              const PlanSpace& space) {
  const plan::Pipeline& original = scored.plan.pipeline(p);
  if (original.chunks != 1) return {original};  // interleaved already: kept as it is
  std::vector<plan::Pipeline> variants;
  plan::Pipeline variant = original;
  variant.warmup.clear();
  for (auto kind : {schedule::ScheduleKind::one_f_one_b, schedule::ScheduleKind::gpipe,
                    schedule::ScheduleKind::zb_h1}) {
    variant.schedule = kind;
    if (space.allows(kind)) variants.push_back(variant);
  }

  // Link-aware warm-up: deeper in front of slow links, as far as memory allows.
  const auto& sim = scored.simulation;
  const auto stages = sim.pipeline_stages(p);
  const int ranks = original.ranks();
  std::vector<double> rank_time;
  std::vector<double> transfer;
  std::vector<int> max_in_flight;
  for (int r = 0; r < ranks; ++r) {
    const auto& stage = *stages[r];
    rank_time.push_back(stage.compute.total());
    if (r + 1 < ranks) transfer.push_back(stage.activation_transfer);
    const auto& memory = stage.memory;
    const double spare = (sim.memory_limit[sim.first_rank[p] + r] - memory.outside_allocator()) /
                             memory.allocator_ratio -
                         memory.static_allocated();
    const double per_micro_batch = std::max(memory.activations + memory.pipe_buffers, 1.0);
    max_in_flight.push_back(
        std::max(1, static_cast<int>(std::min(1e6, std::floor(spare / per_micro_batch)))));
  }
  const auto depths = schedule::link_aware_warmup(rank_time, transfer, max_in_flight);
  std::vector<int> one_f_one_b;
  one_f_one_b.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    one_f_one_b.push_back(schedule::one_f_one_b_in_flight(ranks - r, max_in_flight[r]));
  }
  if (depths != one_f_one_b && space.allows(schedule::ScheduleKind::hetero_1f1b)) {
    variant.schedule = schedule::ScheduleKind::hetero_1f1b;
    variant.warmup = depths;
    variants.push_back(variant);
  }
  if (space.allows(schedule::ScheduleKind::interleaved)) {
    for (int chunks : kInterleaveChunks) {
      if (auto interleaved = interleave(original, chunks)) variants.push_back(*interleaved);
    }
  }
  return variants;
}

double iteration_lower_bound(const cost::CostModel& costs, const plan::Plan& plan) {
  const int64_t seq = costs.model().config().sequence_length(plan.seq_len);
  double bound = 0;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    const int ranks = pipeline.ranks();
    std::vector<double> compute(ranks, 0.0), optimizer(ranks, 0.0), backward(ranks, 0.0);
    std::vector<double> allreduce(ranks, std::numeric_limits<double>::infinity());
    std::vector<double> first_forward(ranks, 0.0);
    std::vector<cost::DeviceGroup> groups;
    for (int s = 0; s < static_cast<int>(pipeline.stages.size()); ++s) {
      const auto& stage = pipeline.stages[s];
      const int r = s % ranks;
      groups.push_back(cost::make_device_group(costs.cluster(), stage.devices, stage.dp, stage.tp));
      const auto& group = groups.back();
      const auto time = costs.range_time(stage.first_layer, stage.end_layer, group,
                                         pipeline.micro_batch_size, seq, stage.recompute);
      compute[r] += time.total();
      if (s < ranks) {
        first_forward[r] = time.forward;
        backward[r] = time.backward();
      }
      optimizer[r] += costs.optimizer_time(stage.first_layer, stage.end_layer, group);
      allreduce[r] = std::min(
          allreduce[r], costs.gradient_allreduce_time(stage.first_layer, stage.end_layer, group));
    }
    // The activation (gradient) of one micro-batch from rank r to r + 1 (back).
    const auto transfer = [&](int r, bool forward) {
      const auto& from = forward ? groups[r] : groups[r + 1];
      const auto& to = forward ? groups[r + 1] : groups[r];
      return costs
          .cut_transfer(pipeline.stages[r].end_layer - 1, pipeline.micro_batch_size, seq, from, to,
                        sim::slowest_pair_link(costs.cluster(), from, to))
          .seconds;
    };
    // Where each rank's last op is the whole backward of the last micro-batch (GPipe, 1F1B
    // and its link-aware form; not ZB-H1's deferred weight gradients, nor interleaved
    // chunks), its gradient then runs back through every rank before it, one backward
    // each, before rank 0 can reduce and step.
    const bool drains = pipeline.chunks == 1 && pipeline.schedule != schedule::ScheduleKind::zb_h1;
    // Micro-batch 0 reaches rank r + 1 after rank r's first forward and its transfer.
    std::vector<double> start(ranks, 0.0);
    std::vector<double> drain(ranks, 0.0);  // rank r's last backward to rank 0's
    for (int r = 0; r + 1 < ranks; ++r) {
      start[r + 1] = start[r] + first_forward[r] + transfer(r, true);
      drain[r + 1] = drain[r] + transfer(r, false) + backward[r];
    }
    for (int r = 0; r < ranks; ++r) {
      const double last_compute = start[r] + pipeline.micro_batches * compute[r];
      bound = std::max(bound, last_compute + allreduce[r] + optimizer[r]);
      if (drains) bound = std::max(bound, last_compute + drain[r] + allreduce[0] + optimizer[0]);
    }
    // With whole backwards rank r runs the forward of micro-batch k + d (d its warm-up
    // depth: 1F1B's ranks − r, the link-aware depths, GPipe's m) only after the backward
    // of k, which waits for k's round trip through the ranks after it: every d micro-batches
    // take at least one round trip, however fast the ranks are.
    const int m = pipeline.micro_batches;
    const bool hetero = pipeline.schedule == schedule::ScheduleKind::hetero_1f1b;
    if (!drains || (hetero && static_cast<int>(pipeline.warmup.size()) != ranks)) continue;
    double round_trip = 0;  // from rank r's forward of a micro-batch to its backward
    for (int r = ranks - 1; r >= 0; --r) {
      round_trip += first_forward[r] + backward[r];
      if (r + 1 < ranks) round_trip += transfer(r, true) + transfer(r, false);
      const int depth = pipeline.schedule == schedule::ScheduleKind::gpipe
                            ? m
                            : std::min(hetero ? pipeline.warmup[r] : ranks - r, m);
      const int trips = (m - 1) / depth + 1;
      bound =
          std::max(bound, start[r] + trips * round_trip + drain[r] + allreduce[0] + optimizer[0]);
    }
  }
  return bound;
}

std::optional<ScoredPlan> best_schedule(const cost::CostModel& costs, const plan::Plan& plan,
                                        const std::string& label, const PlanSpace& space,
                                        double skip_from) {
  // Every pipeline starts as 1F1B: its simulation sizes the warm-up depths.
  plan::Plan start = plan;
  for (int p = 0; p < start.pipeline_count(); ++p) {
    auto& pipeline = start.pipeline(p);
    if (pipeline.chunks != 1) continue;
    pipeline.schedule = schedule::ScheduleKind::one_f_one_b;
    pipeline.warmup.clear();
  }
  ScoredPlan current = score_plan(costs, std::move(start), label);
  // Where no stage has data-parallel ranks there is nothing to all-reduce, and where the
  // all-reduce runs cannot matter.
  bool reduces = false;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    for (const auto& stage : plan.pipeline(p).stages) reduces = reduces || stage.dp > 1;
  }
  // Each pipeline's schedule in turn, the others fixed, each with the all-reduce after the
  // last op and beside the backward left (the runtime runs either as planned).
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    std::optional<ScoredPlan> best;
    for (auto& variant : schedule_variants(current, p, space)) {
      plan::Plan candidate = current.plan;
      candidate.pipeline(p) = std::move(variant);
      // Nor is a variant simulated that cannot beat the fastest that fits so far by its
      // lower bound, nor one too large to fit where it could win only by fitting.
      const double bound = iteration_lower_bound(costs, candidate);
      const double to_beat =
          best && best->fits ? std::min(skip_from, best->iteration_time()) : skip_from;
      if (bound >= to_beat) continue;
      if (best && (best->fits || bound >= best->iteration_time()) && cannot_fit(costs, candidate)) {
        continue;
      }
      for (bool overlap : {false, true}) {
        if (overlap && (!reduces || !plan::traits(candidate.runtime).overlapped_grad_reduce)) {
          continue;
        }
        candidate.overlap_allreduce = overlap;
        if (!simulatable(candidate)) continue;
        // The plan scored already (its pipeline as it started) is not simulated again.
        const bool scored_already = candidate.pipeline(p) == current.plan.pipeline(p) &&
                                    candidate.overlap_allreduce == current.plan.overlap_allreduce;
        ScoredPlan scored = scored_already ? current : score_plan(costs, candidate, label);
        if (!best || preferred(scored, *best)) best = std::move(scored);
      }
    }
    if (!best) return std::nullopt;  // no schedule the space allows runs this pipeline
    current = std::move(*best);
  }
  return current;
}

}  // namespace hyperpipe::planner
