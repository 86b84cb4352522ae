#include "hyperpipe/planner/local_refinement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::planner {
namespace {

// Two islands joined by a slow link: 16 H100 (devices 0-15) in one, 16 A100 (16-31) and
// 16 V100 (32-47) in the other, nodes of 8, as in bench/planner_optimality.
cluster::Cluster islands() {
  const std::string yaml =
      "name: islands\nnodes:\n"
      "  - {name: n0, gpu: H100-SXM, count: 8}\n  - {name: n1, gpu: H100-SXM, count: 8}\n"
      "  - {name: n2, gpu: A100-80GB, count: 8}\n  - {name: n3, gpu: A100-80GB, count: 8}\n"
      "  - {name: n4, gpu: V100-32GB, count: 8}\n  - {name: n5, gpu: V100-32GB, count: 8}\n"
      "islands:\n  - {name: i0, nodes: [n0, n1]}\n  - {name: i1, nodes: [n2, n3, n4, n5]}\n"
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 200 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 25 Gbit/s, latency: 50 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, "islands"));
}

model::Model gpt() {
  const std::string yaml =
      "name: gpt-8x2048\nflavour: gpt\nhidden: 2048\nlayers: 8\nheads: 16\nvocab: 50257\n"
      "seq_len: 2048\ndtype: fp16\n";
  return model::Model(model::read_model_yaml(YamlField::load_string(yaml, "gpt-8x2048")));
}

std::vector<int> range(int first, int end) {
  std::vector<int> ids;
  for (int d = first; d < end; ++d) ids.push_back(d);
  return ids;
}

// The stage search's kind of answer there: the H100s as two groups of 8, which 1F1B's few
// micro-batches in flight leave waiting on the slow link's round trips.
plan::Plan split_h100s() {
  plan::Plan plan;
  plan.model = "gpt-8x2048";
  plan.cluster = "islands";
  plan.micro_batch_size = 8;
  plan.micro_batches = 32;
  plan.stages = {{0, 2, range(32, 48), 8, 2},
                 {2, 5, range(0, 8), 8, 1},
                 {5, 8, range(8, 16), 8, 1},
                 {8, 10, range(16, 32), 8, 2}};
  return plan;
}

plan::Plan merged(plan::Plan plan, int tp) {
  plan.stages[1].devices = range(0, 16);
  plan.stages[1].end_layer = 8;
  plan.stages[1].tp = tp;
  plan.stages[1].dp = 16 / tp;
  plan.stages.erase(plan.stages.begin() + 2);
  return plan;
}

class Refinement : public ::testing::Test {
 protected:
  model::Model model_ = gpt();
  cluster::Cluster cluster_ = islands();
  cost::CostModel costs_{model_, cluster_};
};

// The merge is among the moves: refinement ends at least as fast as the two H100 groups
// merged (either group's tp), which the simulator finds faster than the split.
TEST_F(Refinement, MergesNeighbouringGroupsOfOneGpuType) {
  const ScoredPlan start = score_plan(costs_, split_h100s(), "start");
  ASSERT_TRUE(start.fits);
  double best_merged = start.iteration_time();
  for (int tp : {1, 2}) {
    const ScoredPlan one_group = score_plan(costs_, merged(split_h100s(), tp), "merged");
    ASSERT_TRUE(one_group.fits);
    best_merged = std::min(best_merged, one_group.iteration_time());
  }
  ASSERT_LT(best_merged, 0.9 * start.iteration_time()) << "the instance no longer shows it";
  const ScoredPlan refined = refine(costs_, start, {}, /*merges=*/true);
  EXPECT_LE(refined.iteration_time(), best_merged * (1 + 1e-12));
  EXPECT_LT(refined.plan.stages.size(), start.plan.stages.size());
}

// A stage count the user fixed (`plan --pp 4`) is kept: no merge leaves the space.
TEST_F(Refinement, KeepsAFixedStageCount) {
  const ScoredPlan start = score_plan(costs_, split_h100s(), "start");
  PlanSpace space;
  space.stages = 4;
  const ScoredPlan refined = refine(costs_, start, space, /*merges=*/true);
  EXPECT_EQ(refined.plan.stages.size(), 4u);
  EXPECT_LE(refined.iteration_time(), start.iteration_time());
}

// Under hetero-1F1B the merged group keeps the first's warm-up depth: the plan stays one
// whose schedule builds (one depth per group, never deeper than the group before).
TEST_F(Refinement, AMergeUnderHetero1f1bKeepsOneWarmupDepthPerGroup) {
  plan::Plan plan = split_h100s();
  plan.schedule = schedule::ScheduleKind::hetero_1f1b;
  plan.warmup = {9, 7, 5, 1};
  const ScoredPlan start = score_plan(costs_, plan, "start");
  ASSERT_TRUE(start.fits);
  const ScoredPlan refined = refine(costs_, start, {}, /*merges=*/true);
  ASSERT_EQ(refined.plan.warmup.size(), refined.plan.stages.size());
  for (size_t r = 1; r < refined.plan.warmup.size(); ++r) {
    EXPECT_LE(refined.plan.warmup[r], refined.plan.warmup[r - 1]);
  }
  EXPECT_LT(refined.plan.stages.size(), start.plan.stages.size());
  EXPECT_LE(refined.iteration_time(), start.iteration_time());
}

}  // namespace
}  // namespace hyperpipe::planner
