#include "hyperpipe/plan/framework.h"

#include <gtest/gtest.h>

#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {
namespace {

using schedule::ScheduleKind;

// Two stages of dp 2 × tp 1, 1F1B, no recomputation: every framework runs this.
Plan common_plan() {
  Plan plan;
  plan.model = "gpt2";
  plan.cluster = "a100x8";
  plan.micro_batch_size = 4;
  plan.micro_batches = 8;
  plan.stages = {{0, 7, {0, 1}, 2, 1, model::Recompute::none},
                 {7, 14, {2, 3}, 2, 1, model::Recompute::none}};
  return plan;
}

TEST(Framework, NamesRoundTrip) {
  for (const auto& name : framework_names()) {
    const auto framework = parse_framework(name);
    ASSERT_TRUE(framework) << name;
    EXPECT_EQ(to_string(*framework), name);
    EXPECT_EQ(traits(*framework).framework, *framework);
  }
  EXPECT_FALSE(parse_framework("Megatron"));
}

TEST(Framework, EveryFrameworkRunsTheCommonPlan) {
  for (const auto& name : framework_names()) {
    EXPECT_FALSE(refusal(common_plan(), *parse_framework(name))) << name;
  }
}

TEST(Framework, HyperPipeRunsWhatTheOthersRefuse) {
  Plan plan = common_plan();
  plan.schedule = ScheduleKind::hetero_1f1b;
  plan.warmup = {3, 1};
  plan.stages[1].dp = 1;
  plan.stages[1].devices = {2};
  plan.stages[1].recompute = model::Recompute::full;
  plan.replicas.push_back(common_plan());
  EXPECT_FALSE(refusal(plan, Framework::hyperpipe));
  for (auto framework : {Framework::megatron, Framework::deepspeed, Framework::torchtitan}) {
    EXPECT_TRUE(refusal(plan, framework)) << to_string(framework);
  }
}

TEST(Framework, EachRefusalNamesItsField) {
  const auto refused = [](const Plan& plan, Framework framework) {
    const auto r = refusal(plan, framework);
    return r ? r->field : std::string("(runs)");
  };
  Plan mixed_dp = common_plan();
  mixed_dp.stages[1] = {7, 14, {2}, 1, 1, model::Recompute::none};
  EXPECT_EQ(refused(mixed_dp, Framework::megatron), "stages[1]");
  Plan mixed_tp = common_plan();
  mixed_tp.stages[1] = {7, 14, {2, 3}, 1, 2, model::Recompute::none};
  EXPECT_EQ(refused(mixed_tp, Framework::torchtitan), "stages[1]");
  Plan recompute = common_plan();
  recompute.stages[0].recompute = model::Recompute::selective;
  EXPECT_EQ(refused(recompute, Framework::megatron), "stages[1].recompute");
  Plan selective = common_plan();
  for (auto& stage : selective.stages) stage.recompute = model::Recompute::selective;
  EXPECT_EQ(refused(selective, Framework::deepspeed), "stages[0].recompute");
  EXPECT_EQ(refused(selective, Framework::megatron), "(runs)");
  // Schedules: who runs which.
  const auto under = [&](ScheduleKind kind, Framework framework) {
    Plan plan = common_plan();
    plan.schedule = kind;
    return refused(plan, framework);
  };
  EXPECT_EQ(under(ScheduleKind::gpipe, Framework::megatron), "schedule");
  EXPECT_EQ(under(ScheduleKind::gpipe, Framework::torchtitan), "(runs)");
  EXPECT_EQ(under(ScheduleKind::zb_h1, Framework::torchtitan), "schedule");
  EXPECT_EQ(under(ScheduleKind::interleaved, Framework::deepspeed), "schedule");
  EXPECT_EQ(under(ScheduleKind::interleaved, Framework::megatron), "(runs)");
  Plan overlapped = common_plan();
  overlapped.overlap_allreduce = true;
  EXPECT_EQ(refused(overlapped, Framework::deepspeed), "overlap_allreduce");
  EXPECT_EQ(refused(overlapped, Framework::megatron), "(runs)");
  Plan sharded = common_plan();
  sharded.shard_optimizer = true;
  EXPECT_EQ(refused(sharded, Framework::hyperpipe), "(runs)");
  EXPECT_EQ(refused(sharded, Framework::megatron), "(runs)");
  EXPECT_EQ(refused(sharded, Framework::deepspeed), "(runs)");
  Plan two_pipelines = common_plan();
  two_pipelines.replicas.push_back(common_plan());
  EXPECT_EQ(refused(two_pipelines, Framework::megatron), "replicas");
}

TEST(Framework, WhoBlocksOnItsExchanges) {
  Plan plan = common_plan();
  const auto blocks = [&](Framework framework, ScheduleKind kind) {
    plan.runtime = framework;
    plan.schedule = kind;
    return blocks_on_p2p(plan);
  };
  EXPECT_FALSE(blocks(Framework::hyperpipe, ScheduleKind::one_f_one_b));
  EXPECT_TRUE(blocks(Framework::megatron, ScheduleKind::one_f_one_b));
  EXPECT_FALSE(blocks(Framework::megatron, ScheduleKind::interleaved));  // --overlap-p2p-comm
  EXPECT_TRUE(blocks(Framework::deepspeed, ScheduleKind::one_f_one_b));
  EXPECT_FALSE(blocks(Framework::torchtitan, ScheduleKind::one_f_one_b));
}

}  // namespace
}  // namespace hyperpipe::plan
