// What `hyperpipe simulate` runs: a plan file's plan or a described run, simulated as its
// framework runs it; checked against the simulator called directly.
#include "hyperpipe/report/simulation_run.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/plan/checked_plan.h"
#include "test_files.h"

namespace hyperpipe::report {
namespace {

const std::string kPlan = HYPERPIPE_EXAMPLES "/plans/gpt3-2.7b-4stage.json";
const std::string kA100x8 = HYPERPIPE_EXAMPLES "/clusters/a100x8.yaml";

planner::RunDescription tp2_pp2() {
  planner::RunDescription description;
  description.shape.tp = 2;
  description.shape.pp = 2;
  description.shape.global_batch = 16;
  description.model = "gpt3-2.7b";
  description.cluster = kA100x8;
  return description;
}

TEST(SimulationRun, APlanFileIsSimulatedAsTheSimulatorDoesIt) {
  SimulationRequest request;
  request.plan_path = kPlan;
  const SimulationRun run = simulate_request(request);
  const auto [plan, model, cluster] = plan::load_checked_plan(kPlan, std::nullopt);
  const cost::CostModel costs(model, cluster, {}, nullptr);
  const double direct = sim::simulate_plan(costs, plan).output.iteration_time;
  EXPECT_DOUBLE_EQ(run.simulation.output.iteration_time, direct);
  EXPECT_DOUBLE_EQ(run.report.at("iteration_time_s").get<double>(), direct);
  EXPECT_FALSE(run.described);
  EXPECT_FALSE(run.report.contains("planner"));
  EXPECT_EQ(described_run_line(run), "");
  EXPECT_NE(run.simulation.output.timeline.title.find("(predicted)"), std::string::npos);

  request.overlap_allreduce = true;  // turned on whatever the plan says
  EXPECT_TRUE(simulate_request(request).plan.overlap_allreduce);
}

TEST(SimulationRun, ADescribedRunRunsAsMegatronAndComesWithThePlannersPlans) {
  SimulationRequest request;
  request.described = tp2_pp2();
  const SimulationRun run = simulate_request(request);
  ASSERT_TRUE(run.described);
  EXPECT_EQ(run.described->dp, 2);  // 8 GPUs over tp 2 × pp 2
  EXPECT_EQ(run.plan.runtime, plan::Framework::megatron);
  EXPECT_EQ(run.alternatives.size(), 2u);
  EXPECT_EQ(run.report.at("planner").size(), 2u);
  EXPECT_EQ(run.report.at("plan").at("runtime"), "megatron");
  EXPECT_EQ(described_run_line(run),
            "Megatron-LM run: tp 2 × pp 2 × dp 2 on GPUs 0-7 of a100x8, micro-batch 1 per "
            "data-parallel rank");

  request.runtime = plan::Framework::deepspeed;  // the framework asked for runs it instead
  EXPECT_EQ(simulate_request(request).plan.runtime, plan::Framework::deepspeed);
}

TEST(SimulationRun, APlanFileOrADescribedRunNotBothNorNeither) {
  SimulationRequest both;
  both.plan_path = kPlan;
  both.described = tp2_pp2();
  EXPECT_THROW(simulate_request(both), InputError);
  EXPECT_THROW(simulate_request(SimulationRequest{}), InputError);
  SimulationRequest no_batch;
  no_batch.described = tp2_pp2();
  no_batch.described->shape.global_batch = 0;  // a description without --global-batch
  EXPECT_NE(hyperpipe::testing::error_message<InputError>([&] {
              simulate_request(no_batch);
            }).find("--global-batch B"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::report
