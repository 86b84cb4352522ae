#include "hyperpipe/planner/sharded_planning.h"

#include <future>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"

namespace hyperpipe::planner {
namespace {

Planned plan_one(const ShardedPlanning& planning, bool shard_optimizer,
                 PlanProgressCallback progress) {
  cost::CostOptions options = planning.options;
  options.shard_optimizer = shard_optimizer;
  const cost::CostModel costs(*planning.model, *planning.cluster, options, planning.profiles);
  Planned found;
  if (planning.baseline) {
    auto baseline = best_baseline(costs, planning.request.batch, *planning.baseline);
    const std::string source = "--baseline " + planning.baseline_name;
    const std::string where = "--cluster " + planning.cluster_argument;
    if (!baseline) {
      throw InputError(source, where,
                       "the devices cannot be cut into equal groups of one GPU type");
    }
    if (!baseline->fits) {
      throw InputError(
          source, where,
          infeasibility_reason(costs, planning.request) +
              "; the baseline's best layout still needs " +
              format_bytes(baseline->simulation.output.ranks.front().peak_memory_bytes));
    }
    found.chosen = std::move(*baseline);
  } else {
    PlanRequest reporting = planning.request;
    reporting.progress = std::move(progress);
    found.result = make_plan(costs, reporting);
    found.chosen = found.result->best;
  }
  plan::Plan& plan = found.chosen.plan;
  plan.sequence_parallel = options.sequence_parallel;  // as it was costed
  if (planning.records_dtype) plan.dtype = planning.model->config().dtype;
  if (planning.records_memory_margin) plan.memory_margin = options.memory_margin;
  for (const auto& stage : plan.stages) {
    if (stage.dp > 1) plan.shard_optimizer = shard_optimizer;
  }
  return found;
}

}  // namespace

std::optional<size_t> fastest_found(const std::vector<std::optional<double>>& iterations) {
  std::optional<size_t> best;
  for (size_t i = 0; i < iterations.size(); ++i) {
    if (iterations[i] && (!best || *iterations[i] < *iterations[*best])) best = i;
  }
  return best;
}

Planned plan_sharded(const ShardedPlanning& planning,
                     const std::function<PlanProgressCallback(int index)>& progress) {
  // Each search has its own cost model; the searches share nothing they change.
  std::vector<std::future<Planned>> searches;
  for (const bool sharded : planning.shardings) {
    const int index = static_cast<int>(searches.size());
    searches.push_back(std::async(std::launch::async, plan_one, std::cref(planning), sharded,
                                  progress ? progress(index) : PlanProgressCallback{}));
  }
  std::vector<std::optional<Planned>> found;
  std::vector<std::optional<double>> iterations;
  std::optional<InputError> nothing_fits;
  for (auto& searching : searches) {
    try {
      found.push_back(searching.get());
      iterations.push_back(found.back()->chosen.iteration_time());
    } catch (const InputError& error) {
      nothing_fits = error;
      found.emplace_back();
      iterations.emplace_back();
    }
  }
  const auto best = fastest_found(iterations);
  if (!best) throw *nothing_fits;
  return std::move(*found[*best]);
}

}  // namespace hyperpipe::planner
