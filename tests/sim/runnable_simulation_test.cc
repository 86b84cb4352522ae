#include "hyperpipe/sim/runnable_simulation.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/plan/checked_plan.h"
#include "test_files.h"

namespace hyperpipe::sim {
namespace {

// Interleaved 1F1B over three stand-ins: neighbours send to each other in orders that
// matched blocking pairs deadlock on.
plan::CheckedPlan interleaved_plan() {
  return plan::load_checked_plan(HYPERPIPE_TEST_DATA "/interleaved-blocking-plan.json",
                                 std::nullopt);
}

TEST(RunnableSimulation, BlockingExchangesThatDeadlockAreRefusedNamingTheirCause) {
  const auto checked = interleaved_plan();
  const cost::CostModel costs(checked.model, checked.cluster);
  SimOptions blocking;
  blocking.p2p = P2pMode::blocking;
  const std::string asked = hyperpipe::testing::error_message<InputError>(
      [&] { simulate_runnable(costs, checked.plan, blocking); });
  EXPECT_NE(asked.find("--p2p"), std::string::npos) << asked;
  EXPECT_NE(asked.find("without deadlock"), std::string::npos) << asked;
  SimOptions async;
  async.p2p = P2pMode::async;
  EXPECT_GT(simulate_runnable(costs, checked.plan, async).output.iteration_time, 0);
}

// A framework that cannot express the plan is refused, naming the plan as the user knows
// it; one that can becomes its runtime.
TEST(RunnableSimulation, AFrameworkRunsThePlanOnlyWhereItCanExpressIt) {
  plan::Plan plan = interleaved_plan().plan;
  const std::string refused = hyperpipe::testing::error_message<InputError>(
      [&] { run_with(plan, plan::Framework::deepspeed, "my-plan.json"); });
  EXPECT_NE(refused.find("--runtime"), std::string::npos) << refused;
  EXPECT_NE(refused.find("my-plan.json"), std::string::npos) << refused;
  EXPECT_EQ(plan.runtime, plan::Framework::hyperpipe);  // unchanged
  run_with(plan, plan::Framework::megatron, "my-plan.json");
  EXPECT_EQ(plan.runtime, plan::Framework::megatron);
}

}  // namespace
}  // namespace hyperpipe::sim
