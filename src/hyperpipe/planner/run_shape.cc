#include "hyperpipe/planner/run_shape.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/planner/layer_split.h"

namespace hyperpipe::planner {

int data_parallel_size(int devices, int tp, int pp, int dp) {
  if (dp > 0) return dp;
  if (devices % (tp * pp) != 0) {
    throw InputError(
        fmt::format("--tp {} --pp {}", tp, pp), "",
        fmt::format("tp × pp dividing the cluster's {} GPUs (or --dp to use fewer)", devices));
  }
  return devices / (tp * pp);
}

plan::Plan plan_of_run(const RunShape& run, const cost::CostModel& costs,
                       const std::string& model_ref, const std::string& cluster_ref) {
  const int devices = static_cast<int>(costs.cluster().devices().size());
  const int ranks = run.tp * run.pp * run.dp;
  const std::string shape = fmt::format("--tp {} --pp {} --dp {}", run.tp, run.pp, run.dp);
  if (ranks > devices) {
    throw InputError(shape, "",
                     fmt::format("tp × pp × dp at most the {} GPUs of {}, not {}", devices,
                                 costs.cluster().name(), ranks));
  }
  const int64_t per_micro_batch = run.micro_batch * run.dp;
  if (run.global_batch % per_micro_batch != 0) {
    throw InputError("--global-batch", std::to_string(run.global_batch),
                     fmt::format("a multiple of --micro-batch × dp = {} × {} = {}", run.micro_batch,
                                 run.dp, per_micro_batch));
  }
  const int64_t micro_batches = run.global_batch / per_micro_batch;
  if (micro_batches > kMaxMicroBatches) {
    throw InputError("--micro-batch", std::to_string(run.micro_batch),
                     fmt::format("at most {} micro-batches per iteration, not {}", kMaxMicroBatches,
                                 micro_batches));
  }
  const int layers = costs.model().num_layers();
  const int chunks = run.pp * run.virtual_stages;
  if (chunks > layers - 2) {
    throw InputError(fmt::format("--pp {} --virtual-stages {}", run.pp, run.virtual_stages), "",
                     fmt::format("at most {} model chunks: {} has {} decoder blocks", layers - 2,
                                 costs.model().config().name, layers - 2));
  }

  plan::Plan plan;
  plan.model = model_ref;
  plan.cluster = cluster_ref;
  plan.runtime = run.runtime;
  plan.seq_len = run.seq_len;
  plan.sequence_parallel = run.sequence_parallel;
  plan.shard_optimizer = run.shard_optimizer && run.dp > 1;
  plan.micro_batch_size = per_micro_batch;
  plan.micro_batches = static_cast<int>(micro_batches);
  if (run.virtual_stages > 1) {
    plan.schedule = schedule::ScheduleKind::interleaved;
    plan.chunks = run.virtual_stages;
  }
  const std::vector<int> ends = uniform_split(layers, chunks);
  const int group = run.tp * run.dp;
  for (int c = 0; c < chunks; ++c) {
    const int stage = c % run.pp;  // chunk c runs on pipeline rank c mod pp
    std::vector<int> group_devices;
    for (int d = 0; d < group; ++d) group_devices.push_back(stage * group + d);
    plan.stages.push_back({c == 0 ? 0 : ends[c - 1], ends[c], std::move(group_devices), run.dp,
                           run.tp, run.recompute});
  }
  plan::check_plan(plan, costs.model(), costs.cluster(), shape);
  if (const auto refused = plan::refusal(plan, run.runtime)) {
    throw InputError("--runtime", std::string(plan::to_string(run.runtime)),
                     fmt::format("a framework that can run {} ({}: {})", shape, refused->field,
                                 refused->reason));
  }
  return plan;
}

}  // namespace hyperpipe::planner
