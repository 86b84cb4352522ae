#include "hyperpipe/planner/plan_choices.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::planner {
namespace {

struct Problem {
  model::Model model = model::load_model("gpt2");  // 1024 learned positions
  cluster::Cluster cluster = cluster::load_cluster("a100x8");
};

PlanChoices choices_for(int64_t global_batch) {
  PlanChoices choices;
  choices.model_reference = "gpt2";
  choices.cluster_reference = "a100x8";
  choices.global_batch = global_batch;
  return choices;
}

std::string refusal(const PlanChoices& choices) {
  const Problem problem;
  try {
    planning_of(choices, problem.model, problem.cluster, nullptr);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// What the user fixed is what the planner may not search; what they allowed, its limits.
TEST(PlanChoices, FixedChoicesAndLimitsReachTheSearch) {
  const Problem problem;
  PlanChoices choices = choices_for(64);
  choices.space.tp = 2;
  choices.space.stages = 3;
  choices.space.dp = 1;
  choices.space.recompute = model::Recompute::selective;
  choices.micro_batch = 4;
  choices.space.max_stages = 6;
  choices.space.schedules = {schedule::ScheduleKind::one_f_one_b};
  choices.memory_margin = 0.1;
  choices.dtype_given = true;
  choices.explain = true;
  const ShardedPlanning planning = planning_of(choices, problem.model, problem.cluster, nullptr);
  const PlanSpace& space = planning.request.space;
  EXPECT_EQ(space.tp, 2);
  EXPECT_EQ(space.stages, 3);
  EXPECT_EQ(space.dp, 1);
  EXPECT_EQ(space.recompute, model::Recompute::selective);
  EXPECT_EQ(space.micro_batch, 4);
  EXPECT_EQ(space.max_stages, 6);
  EXPECT_EQ(space.max_tp, PlanSpace{}.max_tp);  // unset: as wide as a node allows
  EXPECT_EQ(planning.request.batch.micro_batch_sizes, std::vector<int64_t>{4});
  EXPECT_EQ(planning.request.batch.model, "gpt2");
  EXPECT_TRUE(planning.request.every_order);
  EXPECT_TRUE(planning.request.peers);
  EXPECT_DOUBLE_EQ(planning.options.memory_margin, 0.1);
  EXPECT_TRUE(planning.records_memory_margin);
  EXPECT_TRUE(planning.records_dtype);
  EXPECT_FALSE(planning.baseline);

  // Unfixed: every divisor of the global batch, and the default margin, unrecorded.
  const ShardedPlanning searched =
      planning_of(choices_for(12), problem.model, problem.cluster, nullptr);
  EXPECT_EQ(searched.request.batch.micro_batch_sizes, (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_FALSE(searched.records_memory_margin);
  EXPECT_DOUBLE_EQ(searched.options.memory_margin, cost::kDefaultMemoryMargin);
}

// The framework that will run the plan limits what is searched and how it is costed.
TEST(PlanChoices, TheFrameworkRestrictsAndCosts) {
  const Problem problem;
  PlanChoices choices = choices_for(64);
  choices.runtime = plan::Framework::megatron;
  const ShardedPlanning planning = planning_of(choices, problem.model, problem.cluster, nullptr);
  EXPECT_TRUE(planning.request.space.same_dp);  // one dp on every stage
  EXPECT_EQ(planning.options.framework.runtime, "megatron");
  EXPECT_EQ(planning.shardings, optimizer_shardings("auto", plan::Framework::megatron));
  choices.runtime = plan::Framework::hyperpipe;
  const ShardedPlanning own = planning_of(choices, problem.model, problem.cluster, nullptr);
  EXPECT_FALSE(own.request.space.same_dp);
  EXPECT_EQ(own.shardings, (std::vector<bool>{false, true}));  // "auto": both, unsharded first
}

TEST(PlanChoices, RefusedNamingTheFlag) {
  PlanChoices choices = choices_for(64);
  choices.micro_batch = 3;
  EXPECT_NE(refusal(choices).find("--micro-batch"), std::string::npos) << refusal(choices);
  choices = choices_for(kMaxMicroBatches * 2);
  choices.micro_batch = 1;
  EXPECT_NE(refusal(choices).find("micro-batches per iteration"), std::string::npos);
  choices = choices_for(64);
  choices.seq_len = 2048;  // gpt2 has 1024 positions
  EXPECT_NE(refusal(choices).find("--seq"), std::string::npos) << refusal(choices);
  EXPECT_NE(refusal(choices_for(0)).find("--global-batch"), std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::planner
