#include "hyperpipe/report/planner_alternatives.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {
namespace {

// The fastest plan that fits of `request`, the optimizer sharded each way the framework
// gains from; none where nothing fits.
std::optional<planner::ScoredPlan> best_plan(const model::Model& model,
                                             const cluster::Cluster& cluster,
                                             const cost::CostOptions& options,
                                             const cost::ProfileDb* profiles,
                                             const planner::PlanRequest& request) {
  std::optional<planner::ScoredPlan> best;
  for (const bool sharded : planner::optimizer_shardings("auto", request.batch.runtime)) {
    cost::CostOptions searched = options;
    searched.shard_optimizer = sharded;
    const cost::CostModel costs(model, cluster, searched, profiles);
    try {
      planner::ScoredPlan found = planner::make_plan(costs, request).best;
      for (const auto& stage : found.plan.stages) {
        if (stage.dp > 1) found.plan.shard_optimizer = sharded;
      }
      if (!best || found.iteration_time() < best->iteration_time()) best = std::move(found);
    } catch (const InputError&) {
      // Nothing of this request fits with this sharding.
    }
  }
  return best;
}

std::string shapes_text(const plan::Plan& plan) {
  std::vector<std::string> shapes;
  for (const auto& stage : plan.stages) {
    const std::string shape = fmt::format("{}×{}", stage.dp, stage.tp);
    if (shapes.empty() || shapes.back() != shape) shapes.push_back(shape);
  }
  return fmt::format("{}", fmt::join(shapes, ", "));
}

std::string schedule_text(const plan::Plan& plan) {
  std::string text(schedule::to_string(plan.schedule));
  if (plan.chunks > 1) text += fmt::format(" ({} chunks)", plan.chunks);
  return text;
}

}  // namespace

std::vector<Alternative> planner_alternatives(const model::Model& model,
                                              const cluster::Cluster& cluster,
                                              const cost::CostOptions& options,
                                              const cost::ProfileDb* profiles,
                                              const planner::BatchSettings& batch,
                                              const planner::RunShape& run) {
  planner::PlanRequest free;
  free.batch = batch;
  free.batch.micro_batch_sizes = planner::micro_batch_sizes(batch.global_batch);
  planner::restrict_to_framework(batch.runtime, free);
  planner::PlanRequest kept = free;
  kept.space.tp = run.tp;
  kept.space.dp = run.dp;
  kept.space.stages = run.pp;
  kept.space.micro_batch = run.micro_batch * run.dp;
  kept.batch.micro_batch_sizes = {kept.space.micro_batch};
  auto with_shape = best_plan(model, cluster, options, profiles, kept);
  auto best = best_plan(model, cluster, options, profiles, free);
  // The kept shape lies within the free space: where the search of the whole space ends
  // behind it (it may, by up to about 1%: bench/planner_optimality), the kept plan is the
  // planner's best.
  if (with_shape && (!best || with_shape->iteration_time() < best->iteration_time())) {
    best = with_shape;
  }
  return {{"planner, your tp, pp, dp and micro-batch kept", std::move(with_shape)},
          {"planner", std::move(best)}};
}

void print_alternatives(const std::vector<Alternative>& alternatives, double yours,
                        std::ostream& out) {
  out << "\nWhat the planner would do instead (same model, cluster, global batch and framework; "
         "`hyperpipe plan` writes it):\n";
  Table table({"Plan", ">GPUs", ">Stages", "dp×tp", ">Sequences per micro-batch", "Schedule",
               ">Iteration", ">Faster"});
  for (const auto& alternative : alternatives) {
    if (!alternative.scored) {
      table.add_row({alternative.name, "", "", "", "", "", "nothing fits", ""});
      continue;
    }
    const auto& plan = alternative.scored->plan;
    int gpus = 0;
    for (int p = 0; p < plan.pipeline_count(); ++p) {
      const auto& pipeline = plan.pipeline(p);
      for (int r = 0; r < pipeline.ranks(); ++r) {
        gpus += static_cast<int>(pipeline.stages[r].devices.size());
      }
    }
    const double time = alternative.scored->iteration_time();
    table.add_row({alternative.name, std::to_string(gpus), std::to_string(plan.ranks()),
                   shapes_text(plan), std::to_string(plan.micro_batch_size), schedule_text(plan),
                   format_duration(time), fmt::format("{:.2f}×", yours / time)});
  }
  table.print(out, "  ");
}

nlohmann::json alternatives_json(const std::vector<Alternative>& alternatives, double yours) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& alternative : alternatives) {
    nlohmann::json entry{{"name", alternative.name}};
    if (alternative.scored) {
      const double time = alternative.scored->iteration_time();
      entry["plan"] = plan::to_json(alternative.scored->plan);
      entry["iteration_time_s"] = time;
      entry["speedup"] = yours / time;
    } else {
      entry["plan"] = nullptr;
    }
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace hyperpipe::report
