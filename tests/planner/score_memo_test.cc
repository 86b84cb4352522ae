#include "hyperpipe/planner/score_memo.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {
namespace {

const std::string kPlan = HYPERPIPE_EXAMPLES "/plans/gpt3-2.7b-4stage.json";

// Within a memo a plan is simulated once: asked again, the same figures under the new
// label, no simulation counted; outside it, or for another cost model, simulated anew.
TEST(ScoreMemo, APlanIsSimulatedOnceWhileAMemoLives) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const plan::Plan plan = plan::load_plan(kPlan);
  const int64_t start = simulation_tally().simulations;
  ScoredPlan first;
  {
    const ScoreMemo memo(costs);
    first = score_plan(costs, plan, "first");
    const ScoredPlan again = score_plan(costs, plan, "again");
    EXPECT_EQ(simulation_tally().simulations, start + 1);
    EXPECT_EQ(again.label, "again");
    EXPECT_EQ(again.plan, first.plan);
    EXPECT_DOUBLE_EQ(again.iteration_time(), first.iteration_time());
    EXPECT_EQ(again.fits, first.fits);
    ASSERT_EQ(again.simulation.output.ranks.size(), first.simulation.output.ranks.size());
    for (size_t r = 0; r < first.simulation.output.ranks.size(); ++r) {
      EXPECT_DOUBLE_EQ(again.simulation.output.ranks[r].peak_memory_bytes,
                       first.simulation.output.ranks[r].peak_memory_bytes);
    }
    // Another plan is simulated.
    plan::Plan other = plan;
    other.micro_batch_size *= 2;
    other.micro_batches /= 2;
    score_plan(costs, other, "other");
    EXPECT_EQ(simulation_tally().simulations, start + 2);
    // Another cost model (another cluster's) is not served from this memo.
    const cost::CostModel elsewhere(model, cluster::load_cluster("a100-v100-t4"));
    score_plan(elsewhere, plan, "elsewhere");
    EXPECT_EQ(simulation_tally().simulations, start + 3);
  }
  score_plan(costs, plan, "after");  // the memo is gone
  EXPECT_EQ(simulation_tally().simulations, start + 4);
}

TEST(ScoreMemo, EqualPlansHashAlikeAndAChangedFieldChangesTheHash) {
  const plan::Plan plan = plan::load_plan(kPlan);
  plan::Plan copy = plan;
  EXPECT_EQ(plan_hash(copy), plan_hash(plan));
  copy.stages[1].end_layer += 1;
  copy.stages[2].first_layer += 1;
  EXPECT_NE(plan_hash(copy), plan_hash(plan));
  copy = plan;
  copy.stages[0].recompute = model::Recompute::full;
  EXPECT_NE(plan_hash(copy), plan_hash(plan));
  copy = plan;
  copy.overlap_allreduce = !plan.overlap_allreduce;
  EXPECT_NE(plan_hash(copy), plan_hash(plan));
}

}  // namespace
}  // namespace hyperpipe::planner
