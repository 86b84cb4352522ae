#include "hyperpipe/sim/plan_simulation.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"

namespace hyperpipe::sim {
namespace {

const std::string kExamples = HYPERPIPE_EXAMPLES;

plan::Plan two_stage_plan(int first_stage_layers) {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";  // 26 layers in the chain
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.stages = {{0, first_stage_layers, {0, 1}, 2, 1, model::Recompute::full},
                 {first_stage_layers, 26, {4, 5}, 2, 1, model::Recompute::full}};
  return plan;
}

TEST(PlanSimulation, CostsComeFromTheCostModel) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const plan::Plan plan = two_stage_plan(13);
  plan::check_plan(plan, model, cluster, "test");
  const PlanSimulation result = simulate_plan(costs, plan);
  const auto group = cost::make_device_group(cluster, {4, 5}, 2, 1);
  const auto expected = costs.range_time(13, 26, group, 2, 2048, model::Recompute::full);
  EXPECT_DOUBLE_EQ(result.stages[1].compute.forward, expected.forward);
  // The iteration is at least the slower stage's compute for all micro-batches.
  EXPECT_GT(result.output.iteration_time, 8 * expected.total());
  EXPECT_EQ(result.devices, 4);
  EXPECT_DOUBLE_EQ(result.tokens_per_s, 16.0 * 2048 / result.output.iteration_time);
  EXPECT_GT(result.mfu, 0.0);
  EXPECT_LT(result.mfu, 1.0);
  EXPECT_EQ(result.output.timeline.tracks[1].name, "stage 1: V100-16GB ×2 [4-5]");
}

TEST(PlanSimulation, MovingLayersToTheFasterGpuHelps) {
  // A100s are about twice as fast as V100s here: an even split leaves the A100s idle.
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const double even = simulate_plan(costs, two_stage_plan(13)).output.iteration_time;
  const double skewed = simulate_plan(costs, two_stage_plan(17)).output.iteration_time;
  EXPECT_LT(skewed, even);
}

TEST(PlanSimulation, ExamplePlanRuns) {
  const std::string path = kExamples + "/plans/gpt3-2.7b-4stage.json";
  const plan::Plan plan = plan::load_plan(path);
  const auto model = model::load_model(plan.model);
  const auto cluster = cluster::load_cluster(plan::resolve_reference(path, plan.cluster));
  plan::check_plan(plan, model, cluster, path);
  const cost::CostModel costs(model, cluster);
  const PlanSimulation result = simulate_plan(costs, plan);
  ASSERT_EQ(result.output.ranks.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_LE(result.output.ranks[r].peak_memory_bytes, result.memory_capacity[r]) << r;
    EXPECT_EQ(result.output.ranks[r].peak_in_flight, 4 - static_cast<int>(r));
  }
  // The slow link between the islands (A100 → V100) makes stage 1 wait on transfers.
  EXPECT_GT(result.output.ranks[1].comm_wait, 0.0);
}

}  // namespace
}  // namespace hyperpipe::sim
