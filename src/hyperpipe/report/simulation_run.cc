#include "hyperpipe/report/simulation_run.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/report/simulation_report.h"
#include "hyperpipe/sim/runnable_simulation.h"

namespace hyperpipe::report {
namespace {

struct Loaded {
  plan::Plan plan;
  model::Model model;
  cluster::Cluster cluster;
  std::string source;  // the plan file, or the run's shape, for messages
  std::optional<planner::RunShape> described;
};

Loaded load(const SimulationRequest& request) {
  if (request.plan_path && request.described) {
    throw InputError("--plan", *request.plan_path,
                     "no run description beside it (--model, --global-batch, --tp, --pp, --dp, "
                     "--micro-batch, …): a plan file or a description, not both");
  }
  if (request.plan_path) {
    auto [plan, model, cluster] = plan::load_checked_plan(*request.plan_path, request.cluster);
    return {std::move(plan), std::move(model), std::move(cluster), *request.plan_path,
            std::nullopt};
  }
  if (!request.described || request.described->shape.global_batch <= 0) {
    throw InputError("simulate", "",
                     "--plan FILE, or a run described as Megatron-LM's command line: --model M "
                     "--cluster C --global-batch B [--tp T --pp P --dp D --micro-batch b]");
  }
  planner::RunDescription description = *request.described;
  description.shape.runtime = request.runtime.value_or(plan::Framework::megatron);
  auto [plan, model, cluster, shape] = planner::plan_described_run(description);
  return {std::move(plan), std::move(model), std::move(cluster),
          fmt::format("--tp {} --pp {} --dp {}", shape.tp, shape.pp, shape.dp), shape};
}

}  // namespace

SimulationRun simulate_request(const SimulationRequest& request) {
  auto [plan, model, cluster, source, described] = load(request);
  if (request.overlap_allreduce) plan.overlap_allreduce = true;
  std::optional<cost::ProfileDb> profiles;
  if (request.profiles) {
    profiles = cost::ProfileDb::load_for(*request.profiles, model.config().name);
  }
  cost::CostOptions cost_options;
  cost_options.estimator = request.estimator;
  const cost::CostModel costs(model, cluster, cost_options, profiles ? &*profiles : nullptr);
  // A described run already has the framework asked for as its runtime.
  if (request.runtime && !described) sim::run_with(plan, *request.runtime, source);
  sim::SimOptions options;
  if (request.p2p) options.p2p = *request.p2p;
  sim::PlanSimulation simulation = sim::simulate_runnable(costs, plan, options);
  simulation.output.timeline.title =
      fmt::format("{} on {}: {}, {} (predicted)", model.config().name, cluster.name(),
                  schedule::to_string(plan.schedule),
                  counted(plan.micro_batches, "micro-batch", "micro-batches"));

  const int64_t seq = model.config().sequence_length(plan.seq_len);
  auto report = simulation_report(plan, simulation, model.config().name, cluster.name(), seq);
  std::vector<Alternative> alternatives;
  if (described) {
    const planner::BatchSettings batch(plan.model, plan.cluster, described->global_batch,
                                       plan.seq_len, {}, plan.runtime);
    alternatives = planner_alternatives(model, cluster, cost_options,
                                        profiles ? &*profiles : nullptr, batch, *described);
    report["plan"] = plan::to_json(plan);
    report["planner"] = alternatives_json(alternatives, simulation.output.iteration_time);
  }
  return {std::move(plan),      std::move(model),        std::move(cluster), std::move(simulation),
          std::move(described), std::move(alternatives), std::move(report)};
}

std::string described_run_line(const SimulationRun& run) {
  if (!run.described) return "";
  const planner::RunShape& shape = *run.described;
  return fmt::format(
      "{} run: tp {} × pp {} × dp {} on GPUs {} of {}, micro-batch {} per data-parallel rank{}",
      plan::traits(run.plan.runtime).display_name, shape.tp, shape.pp, shape.dp,
      plan::format_devices(plan::devices_in_rank_order(run.plan)), run.cluster.name(),
      shape.micro_batch,
      shape.virtual_stages > 1 ? fmt::format(", {} virtual stages per rank", shape.virtual_stages)
                               : "");
}

}  // namespace hyperpipe::report
