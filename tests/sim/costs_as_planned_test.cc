#include "hyperpipe/sim/costs_as_planned.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::sim {
namespace {

plan::Plan data_parallel_plan() {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";  // 26 layers in the chain
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.stages = {{0, 13, {0, 1}, 2, 1, model::Recompute::full},  // dp 2
                 {13, 26, {4, 5}, 2, 1, model::Recompute::full}};
  return plan;
}

// Every plan-wide setting reaches the cost settings; what the caller costs beyond them
// (its estimator) is kept.
TEST(CostsAsPlanned, EveryPlanWideSettingIsTheCostModels) {
  plan::Plan plan = data_parallel_plan();
  plan.runtime = plan::Framework::deepspeed;
  plan.sequence_parallel = true;
  plan.shard_optimizer = true;
  plan.memory_margin = 0.1;
  plan.gradient_reduce_dtype = model::DType::bf16;
  cost::CostOptions base;
  base.estimator = cost::Estimator::roofline;
  const cost::CostOptions costed = costs_as_planned(plan, base);
  EXPECT_TRUE(costed.sequence_parallel);
  EXPECT_TRUE(costed.shard_optimizer);
  EXPECT_DOUBLE_EQ(costed.memory_margin, 0.1);
  EXPECT_EQ(costed.gradient_reduce_dtype, model::DType::bf16);
  EXPECT_EQ(costed.framework.runtime, "deepspeed");
  EXPECT_EQ(costed.reduce_scatter_gradients, plan::traits(plan.runtime).reduce_scatters_gradients);
  EXPECT_EQ(costed.estimator, cost::Estimator::roofline);

  // A planner's candidates are costed with sequence parallelism before it stamps the plan.
  plan.sequence_parallel = false;
  plan.shard_optimizer = false;
  plan.memory_margin.reset();
  base.sequence_parallel = true;
  const cost::CostOptions candidate = costs_as_planned(plan, base);
  EXPECT_TRUE(candidate.sequence_parallel);
  EXPECT_FALSE(candidate.shard_optimizer);
  EXPECT_DOUBLE_EQ(candidate.memory_margin, cost::kDefaultMemoryMargin);
}

// The simulator costs a plan as the re-planner's cost model does: given plain costs, it
// predicts the same peaks as given the plan's own settings.
TEST(CostsAsPlanned, TheSimulatorCostsAPlanAsItsSettingsSay) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  plan::Plan plan = data_parallel_plan();
  plan.shard_optimizer = true;
  plan.gradient_reduce_dtype = model::DType::bf16;
  plan.memory_margin = 0.2;
  plan::check_plan(plan, model, cluster, "test");
  const PlanSimulation plain = simulate_plan(cost::CostModel(model, cluster), plan);
  const PlanSimulation settled =
      simulate_plan(cost::CostModel(model, cluster, costs_as_planned(plan)), plan);
  ASSERT_EQ(plain.device_peaks.size(), settled.device_peaks.size());
  for (size_t r = 0; r < plain.device_peaks.size(); ++r) {
    EXPECT_DOUBLE_EQ(plain.device_peaks[r].total(), settled.device_peaks[r].total()) << r;
    EXPECT_DOUBLE_EQ(plain.memory_limit[r], settled.memory_limit[r]) << r;
  }
  // And the settings matter: without the sharded optimizer a rank holds more.
  plan.shard_optimizer = false;
  const PlanSimulation whole = simulate_plan(cost::CostModel(model, cluster), plan);
  EXPECT_GT(whole.device_peaks[0].total(), plain.device_peaks[0].total());
  EXPECT_DOUBLE_EQ(plain.memory_limit[0], plain.memory_capacity[0] * 0.8);
}

}  // namespace
}  // namespace hyperpipe::sim
