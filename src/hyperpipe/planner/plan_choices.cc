#include "hyperpipe/planner/plan_choices.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/sim/costs_as_planned.h"

namespace hyperpipe::planner {
namespace {

// The cost settings the choices fix; each search sets its own optimizer sharding.
cost::CostOptions cost_options_of(const PlanChoices& choices) {
  cost::CostOptions options;
  options.sequence_parallel = choices.sequence_parallel;
  sim::cost_as_framework_runs(choices.runtime, options);
  if (choices.memory_margin) options.memory_margin = *choices.memory_margin;
  options.estimator = choices.estimator;
  return options;
}

// The micro-batch sizes searched: every divisor within the limit, or the one fixed, checked.
std::vector<int64_t> micro_batch_sizes_of(const PlanChoices& choices) {
  const int64_t global_batch = choices.global_batch;
  if (!choices.micro_batch) return micro_batch_sizes(global_batch);
  const int64_t size = *choices.micro_batch;
  if (global_batch % size != 0) {
    throw InputError("--micro-batch", std::to_string(size),
                     fmt::format("expected a divisor of the global batch {}", global_batch));
  }
  if (global_batch / size > kMaxMicroBatches) {
    throw InputError("--micro-batch", std::to_string(size),
                     fmt::format("expected at most {} micro-batches per iteration, got {}",
                                 kMaxMicroBatches, global_batch / size));
  }
  return {size};
}

}  // namespace

ShardedPlanning planning_of(const PlanChoices& choices, const model::Model& model,
                            const cluster::Cluster& cluster, const cost::ProfileDb* profiles) {
  if (choices.global_batch <= 0) {
    throw InputError("--global-batch", "", "expected a positive number of sequences");
  }
  const int64_t seq = model.config().sequence_length(choices.seq_len);
  if (model.config().flavour == model::Flavour::gpt && seq > model.config().seq_len) {
    throw InputError(
        "--seq", std::to_string(seq),
        fmt::format("expected at most the model's {} learned positions", model.config().seq_len));
  }
  PlanRequest request;
  request.batch = {choices.model_reference, choices.cluster_reference, choices.global_batch,
                   choices.seq_len, micro_batch_sizes_of(choices)};
  request.space = choices.space;
  if (choices.micro_batch) request.space.micro_batch = *choices.micro_batch;
  restrict_to_framework(choices.runtime, request);
  request.every_order = choices.explain;
  request.peers = choices.explain;

  ShardedPlanning planning;
  planning.model = &model;
  planning.cluster = &cluster;
  planning.options = cost_options_of(choices);
  planning.profiles = profiles;
  planning.request = request;
  planning.shardings = optimizer_shardings(choices.shard_optimizer, choices.runtime);
  planning.baseline = choices.baseline;
  planning.baseline_name = choices.baseline_name;
  planning.cluster_argument = choices.cluster_argument;
  planning.records_dtype = choices.dtype_given;
  planning.records_memory_margin = choices.memory_margin.has_value();
  return planning;
}

}  // namespace hyperpipe::planner
