#include "hyperpipe/planner/run_shape.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::planner {
namespace {

// llama2-7b: 32 blocks, 34 layers in the chain.
struct Fixture {
  model::Model model = model::load_model("llama2-7b");
  cluster::Cluster cluster =
      cluster::load_cluster(HYPERPIPE_EXAMPLES "/clusters/h100-a100-islands.yaml");
  cost::CostModel costs{model, cluster};
};

TEST(RunShape, RanksAreNumberedAsMegatronNumbersThem) {
  const Fixture f;
  RunShape run;
  run.tp = 2;
  run.pp = 4;
  run.dp = 2;
  run.micro_batch = 2;
  run.global_batch = 64;
  const plan::Plan plan = plan_of_run(run, f.costs, "llama2-7b", "islands");
  EXPECT_EQ(plan.runtime, plan::Framework::megatron);
  EXPECT_EQ(plan.schedule, schedule::ScheduleKind::one_f_one_b);
  // A micro-batch of 2 per data-parallel rank is 4 sequences over the stage's dp of 2;
  // 64 sequences are 16 of them.
  EXPECT_EQ(plan.micro_batch_size, 4);
  EXPECT_EQ(plan.micro_batches, 16);
  ASSERT_EQ(plan.stages.size(), 4u);
  // Rank r = pp_rank · dp · tp + dp_rank · tp + tp_rank runs on device r.
  EXPECT_EQ(plan.stages[1].devices, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(plan.stages[3].devices, (std::vector<int>{12, 13, 14, 15}));
  // 32 blocks, 8 per stage: the embedding joins the first, the head the last.
  EXPECT_EQ(plan.stages[0].first_layer, 0);
  EXPECT_EQ(plan.stages[0].end_layer, 9);
  EXPECT_EQ(plan.stages[1].end_layer, 17);
  EXPECT_EQ(plan.stages[3].end_layer, 34);
  for (const auto& stage : plan.stages) {
    EXPECT_EQ(stage.dp, 2);
    EXPECT_EQ(stage.tp, 2);
    EXPECT_EQ(stage.recompute, model::Recompute::none);
  }
}

TEST(RunShape, VirtualStagesInterleaveChunksOverThePipelineRanks) {
  const Fixture f;
  RunShape run;
  run.pp = 2;
  run.dp = 8;
  run.virtual_stages = 2;
  run.global_batch = 64;
  run.recompute = model::Recompute::full;
  const plan::Plan plan = plan_of_run(run, f.costs, "llama2-7b", "islands");
  EXPECT_EQ(plan.schedule, schedule::ScheduleKind::interleaved);
  EXPECT_EQ(plan.chunks, 2);
  ASSERT_EQ(plan.stages.size(), 4u);
  EXPECT_EQ(plan.ranks(), 2);
  EXPECT_EQ(plan.stages[2].devices, plan.stages[0].devices);  // chunk 2 on rank 0
  EXPECT_EQ(plan.stages[3].devices, plan.stages[1].devices);
  EXPECT_EQ(plan.stages[1].end_layer - plan.stages[1].first_layer, 8);
  EXPECT_EQ(plan.stages[3].recompute, model::Recompute::full);
}

// The data-parallel size as Megatron-LM takes it: given, or the world over tp × pp, which
// must divide it.
TEST(RunShape, TheDataParallelSizeIsTheWorldOverTpAndPp) {
  EXPECT_EQ(data_parallel_size(16, 2, 4, 0), 2);
  EXPECT_EQ(data_parallel_size(16, 2, 4, 1), 1);  // fewer than the cluster has
  EXPECT_EQ(data_parallel_size(13, 1, 1, 0), 13);
  try {
    data_parallel_size(12, 8, 1, 0);
    FAIL() << "8 does not divide 12";
  } catch (const InputError& error) {
    EXPECT_EQ(error.source(), "--tp 8 --pp 1");
    EXPECT_NE(error.expected().find("dividing the cluster's 12 GPUs"), std::string::npos);
  }
}

TEST(RunShape, RefusesWhatMegatronWouldRefuseNamingTheFlag) {
  const Fixture f;
  const auto refusal = [&](RunShape run) -> std::string {
    try {
      plan_of_run(run, f.costs, "llama2-7b", "islands");
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  };
  RunShape run;
  run.dp = 4;
  run.global_batch = 30;  // not a multiple of 1 × 4
  EXPECT_NE(refusal(run).find("--global-batch"), std::string::npos) << refusal(run);
  run.global_batch = 32;
  run.pp = 4;
  run.tp = 4;  // 64 ranks on 32 GPUs
  EXPECT_NE(refusal(run).find("at most the 32 GPUs"), std::string::npos) << refusal(run);
  run.tp = 1;
  run.virtual_stages = 9;  // 36 chunks of 32 blocks
  EXPECT_NE(refusal(run).find("--virtual-stages"), std::string::npos) << refusal(run);
  run.virtual_stages = 1;
  run.pp = 1;
  run.dp = 32;  // one stage over H100s and A100s
  EXPECT_NE(refusal(run).find("one GPU type"), std::string::npos) << refusal(run);
  run.dp = 16;
  run.pp = 2;
  run.runtime = plan::Framework::deepspeed;
  run.recompute = model::Recompute::selective;  // DeepSpeed recomputes whole layers
  EXPECT_NE(refusal(run).find("--runtime"), std::string::npos) << refusal(run);
}

}  // namespace
}  // namespace hyperpipe::planner
