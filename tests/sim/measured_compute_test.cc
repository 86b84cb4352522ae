#include "hyperpipe/sim/measured_compute.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::sim {
namespace {

// gpt3-1.3b on the A100 + V100 + T4 example: the V100 stage is the slower one.
plan::Plan two_stage_plan(schedule::ScheduleKind kind, int chunks = 1) {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";  // 26 layers in the chain
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.schedule = kind;
  plan.chunks = chunks;
  if (chunks == 1) {
    plan.stages = {{0, 13, {0, 1}, 2, 1, model::Recompute::full},
                   {13, 26, {4, 5}, 2, 1, model::Recompute::full}};
  } else {
    plan.stages = {{0, 7, {0, 1}, 2, 1, model::Recompute::full},
                   {7, 13, {4, 5}, 2, 1, model::Recompute::full},
                   {13, 20, {0, 1}, 2, 1, model::Recompute::full},
                   {20, 26, {4, 5}, 2, 1, model::Recompute::full}};
  }
  return plan;
}

struct Fixture {
  model::Model model = model::load_model("gpt3-1.3b");
  cluster::Cluster cluster = cluster::load_cluster("a100-v100-t4");
  cost::CostModel costs{model, cluster};
};

PlanSimulation replay(const cost::CostModel& costs, const plan::Plan& plan,
                      const MeasuredComputes& measured) {
  SimOptions options;
  options.measured = &measured;
  return simulate_plan(costs, plan, options);
}

// The simulator's own timeline read back as if a run had measured it gives back its
// iteration: every op, the optimizer steps of interleaved chunks included, lands on its stage.
TEST(MeasuredCompute, ReplayingThePredictionGivesThePrediction) {
  const Fixture f;
  for (const auto& [kind, chunks] : {std::pair{schedule::ScheduleKind::one_f_one_b, 1},
                                     std::pair{schedule::ScheduleKind::zb_h1, 1},
                                     std::pair{schedule::ScheduleKind::interleaved, 2}}) {
    const plan::Plan plan = two_stage_plan(kind, chunks);
    plan::check_plan(plan, f.model, f.cluster, "test");
    const PlanSimulation predicted = simulate_plan(f.costs, plan);
    const MeasuredComputes measured = measured_compute(plan, predicted.output.timeline);
    ASSERT_EQ(measured.size(), plan.stages.size());
    const auto& last = measured.at({0, static_cast<int>(plan.stages.size()) - 1});
    ASSERT_TRUE(last.forward);
    EXPECT_NEAR(*last.forward, predicted.stages.back().compute.forward, 1e-12);
    EXPECT_NEAR(replay(f.costs, plan, measured).output.iteration_time,
                predicted.output.iteration_time, 1e-9)
        << schedule::to_string(kind);
  }
}

// The slower, last stage runs its forwards and backwards back to back after its first
// input arrives: each of its 8 forwards taking δ longer adds 8 δ to the iteration.
TEST(MeasuredCompute, ASlowerForwardOfTheBottleneckStretchesTheIteration) {
  const Fixture f;
  const plan::Plan plan = two_stage_plan(schedule::ScheduleKind::one_f_one_b);
  const PlanSimulation predicted = simulate_plan(f.costs, plan);
  MeasuredComputes measured = measured_compute(plan, predicted.output.timeline);
  const double delta = 0.010;
  *measured.at({0, 1}).forward += delta;
  EXPECT_NEAR(replay(f.costs, plan, measured).output.iteration_time,
              predicted.output.iteration_time + 8 * delta, 1e-9);
  // The faster first stage has room to spare: the same δ there costs only its first
  // forward's, before the last stage can start.
  measured = measured_compute(plan, predicted.output.timeline);
  *measured.at({0, 0}).forward += delta;
  EXPECT_NEAR(replay(f.costs, plan, measured).output.iteration_time,
              predicted.output.iteration_time + delta, 1e-9);
}

trace::Interval op(const std::string& name, int stage, double seconds) {
  return {name, stage, 0, 0, 0.0, seconds};
}

TEST(MeasuredCompute, MediansPerStageAcrossTheGroupsProcesses) {
  plan::Plan plan = two_stage_plan(schedule::ScheduleKind::one_f_one_b);
  plan::Pipeline replica = plan;
  replica.stages = {{0, 26, {6}, 1, 1, model::Recompute::none}};
  plan.replicas = {replica};
  trace::Timeline run;
  // Stage 1's two dp processes; a process on no device of the plan; the replica.
  run.tracks.push_back({"rank 2",
                        {4},
                        {op("F", 1, 0.1), op("F", 1, 0.3), op("BW", 1, 0.5),
                         op("optimizer", -1, 0.02), op("optimizer", -1, 0.03)},
                        {},
                        {},
                        {}});
  run.tracks.push_back({"rank 3", {5}, {op("F", 1, 0.2), op("BW", 1, 0.7)}, {}, {}, {}});
  run.tracks.push_back({"stranger", {9}, {op("F", 1, 9.0)}, {}, {}, {}});
  run.tracks.push_back({"replica", {6}, {op("B", 0, 0.4), op("W", 0, 0.1)}, {}, {}, {}});
  const MeasuredComputes measured = measured_compute(plan, run);
  ASSERT_EQ(measured.size(), 2u);
  const MeasuredCompute& stage = measured.at({0, 1});
  EXPECT_DOUBLE_EQ(*stage.forward, 0.2);
  EXPECT_DOUBLE_EQ(*stage.backward, 0.7);  // the upper median of two
  EXPECT_DOUBLE_EQ(*stage.optimizer, 0.05);
  EXPECT_FALSE(stage.backward_input);
  const MeasuredCompute& whole = measured.at({1, 0});
  EXPECT_DOUBLE_EQ(*whole.backward_input, 0.4);
  EXPECT_DOUBLE_EQ(*whole.backward_weight, 0.1);
  EXPECT_FALSE(whole.forward);
}

TEST(MeasuredCompute, AWholeBackwardReplacesTheSplitOnesCost) {
  StageCost cost{1.0, 2.0, 1.5, 0.25};
  apply_measured({std::nullopt, 3.0, std::nullopt, std::nullopt, std::nullopt}, cost);
  EXPECT_DOUBLE_EQ(cost.backward_input + cost.backward_weight - cost.split_extra, 3.0);
  EXPECT_DOUBLE_EQ(cost.forward, 1.0);  // not measured: kept

  StageCost split{1.0, 2.0, 1.5, 0.25};
  apply_measured({0.5, 3.0, 2.5, 1.0, 0.1}, split);
  EXPECT_DOUBLE_EQ(split.backward_input, 2.5);
  EXPECT_DOUBLE_EQ(split.backward_weight, 1.0);
  EXPECT_DOUBLE_EQ(split.split_extra, 0.5);  // B + W − BW
  EXPECT_DOUBLE_EQ(split.forward, 0.5);
  EXPECT_DOUBLE_EQ(split.optimizer, 0.1);
}

}  // namespace
}  // namespace hyperpipe::sim
