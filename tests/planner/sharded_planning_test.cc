#include "hyperpipe/planner/sharded_planning.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::planner {
namespace {

// Of the searches that found a plan, the fastest is kept, the first of a tie; nothing when
// none found one.
TEST(ShardedPlanning, TheFastestFoundIsKeptTheFirstOfATie) {
  EXPECT_EQ(fastest_found({std::nullopt, 2.0, 1.0, 1.0}), 2u);
  EXPECT_EQ(fastest_found({3.0, 3.0}), 0u);
  EXPECT_EQ(fastest_found({std::nullopt, 4.0}), 1u);
  EXPECT_FALSE(fastest_found({std::nullopt, std::nullopt}));
  EXPECT_FALSE(fastest_found({}));
}

struct PlanningProblem {
  model::Model model = model::load_model("gpt3-1.3b");
  cluster::Cluster cluster = cluster::load_cluster("a100-v100-t4");

  ShardedPlanning planning(std::vector<bool> shardings) const {
    ShardedPlanning p;
    p.model = &model;
    p.cluster = &cluster;
    p.request.batch = {"gpt3-1.3b", "a100-v100-t4", 32, 0, micro_batch_sizes(32)};
    p.shardings = std::move(shardings);
    p.cluster_argument = "a100-v100-t4";
    return p;
  }

  // The planner's best with the optimizer sharded or not, asked directly.
  ScoredPlan direct(bool shard_optimizer) const {
    cost::CostOptions options;
    options.shard_optimizer = shard_optimizer;
    const cost::CostModel costs(model, cluster, options);
    return make_plan(costs, planning({}).request).best;
  }
};

// Both shardings searched side by side keep the faster of the plans each finds alone, and
// the plan records the sharding only where a stage has data-parallel ranks to shard over.
TEST(ShardedPlanning, BothWaysKeepsTheFasterPlanOfEach) {
  PlanningProblem f;
  int calls = 0;
  const Planned planned = plan_sharded(f.planning({false, true}), [&](int index) {
    EXPECT_EQ(index, calls++);
    return PlanProgressCallback{};
  });
  EXPECT_EQ(calls, 2);
  ASSERT_TRUE(planned.result);
  const double unsharded = f.direct(false).iteration_time();
  const double sharded = f.direct(true).iteration_time();
  EXPECT_DOUBLE_EQ(planned.chosen.iteration_time(), std::min(unsharded, sharded));
  bool any_dp = false;
  for (const auto& stage : planned.chosen.plan.stages) any_dp = any_dp || stage.dp > 1;
  const bool chose_sharded = sharded < unsharded;
  EXPECT_EQ(planned.chosen.plan.shard_optimizer, any_dp && chose_sharded);
}

// What the plan records of its costing: the sequence parallelism always, the dtype and the
// memory margin only where they were given.
TEST(ShardedPlanning, ThePlanRecordsTheSettingsGiven) {
  PlanningProblem f;
  ShardedPlanning planning = f.planning({false});
  planning.options.memory_margin = 0.2;
  planning.records_memory_margin = true;
  Planned planned = plan_sharded(planning, nullptr);
  EXPECT_EQ(planned.chosen.plan.memory_margin, 0.2);
  EXPECT_FALSE(planned.chosen.plan.sequence_parallel);
  planning.records_memory_margin = false;
  planning.records_dtype = true;
  planned = plan_sharded(planning, nullptr);
  EXPECT_FALSE(planned.chosen.plan.memory_margin);
  EXPECT_EQ(planned.chosen.plan.dtype, f.model.config().dtype);
}

// A baseline replaces the search: its best layout, with no search result.
TEST(ShardedPlanning, ABaselineIsItsBestLayout) {
  PlanningProblem f;
  ShardedPlanning planning = f.planning({false});
  planning.baseline = Baseline::uniform;
  planning.baseline_name = "uniform";
  const Planned planned = plan_sharded(planning, nullptr);
  EXPECT_FALSE(planned.result);
  const cost::CostModel costs(f.model, f.cluster);
  const auto baseline = best_baseline(costs, planning.request.batch, Baseline::uniform);
  ASSERT_TRUE(baseline);
  EXPECT_DOUBLE_EQ(planned.chosen.iteration_time(), baseline->iteration_time());
}

}  // namespace
}  // namespace hyperpipe::planner
