#include "hyperpipe/planner/replan.h"

#include <gtest/gtest.h>

#include <set>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

// a100-v100-t4 after losing A100 1 and V100s 3 and 7, written by hand.
constexpr const char* kWhatIsLeft = R"(
name: a100-v100-t4
nodes:
  - {name: a100-0, gpu: A100-40GB, count: 3}
  - {name: v100-0, gpu: V100-16GB, count: 6}
  - {name: t4-0, gpu: T4, count: 4}
islands:
  - {name: ampere, nodes: [a100-0]}
  - {name: legacy, nodes: [v100-0, t4-0]}
links:
  intra_node: {bandwidth: 300 GB/s, latency: 2 us}
  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}
  inter_island: {bandwidth: 10 Gbit/s, latency: 50 us}
  overrides:
    - {between: [v100-0, v100-0], bandwidth: 150 GB/s, latency: 2 us}
    - {between: [t4-0, t4-0], bandwidth: 12 GB/s, latency: 10 us}
)";

plan::Plan first_plan(const model::Model& model, const cluster::Cluster& cluster) {
  const cost::CostModel costs(model, cluster);
  PlanRequest request;
  request.batch = {"gpt3-2.7b", "a100-v100-t4", 64, 0, micro_batch_sizes(64)};
  return make_plan(costs, request).best.plan;
}

TEST(Replan, PlansTheDevicesLeftAsAClusterOfThemAlone) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto whole = cluster::load_cluster("a100-v100-t4");
  const plan::Plan before = first_plan(model, whole);
  std::vector<int> left;
  for (int id = 0; id < 16; ++id) {
    if (id != 1 && id != 4 + 3 && id != 4 + 7) left.push_back(id);
  }
  const Replanned after = replan(before, model, whole, left, nullptr);
  EXPECT_TRUE(after.best.fits);
  EXPECT_EQ(after.best.plan.global_batch(), before.global_batch());
  EXPECT_FALSE(plan::refusal(after.best.plan, plan::Framework::hyperpipe).has_value());
  // Only devices that are left, each once.
  std::set<int> used;
  for (int p = 0; p < after.best.plan.pipeline_count(); ++p) {
    const auto& pipeline = after.best.plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {
      for (int device : pipeline.stages[r].devices) {
        EXPECT_TRUE(std::find(left.begin(), left.end(), device) != left.end()) << device;
        EXPECT_TRUE(used.insert(device).second) << device;
      }
    }
  }
  // The same iteration as planning the hand-written cluster of what is left.
  const auto reference_cluster =
      cluster::read_cluster_yaml(YamlField::load_string(kWhatIsLeft, "left"));
  const cost::CostModel reference_costs(model, reference_cluster);
  PlanRequest request;
  request.batch = {"gpt3-2.7b", "left", 64, 0, micro_batch_sizes(64)};
  const double reference = make_plan(reference_costs, request).best.iteration_time();
  EXPECT_NEAR(after.best.iteration_time(), reference, 1e-9 * reference);
  // Fewer devices: no faster than before.
  const cost::CostModel costs(model, whole);
  EXPECT_GE(after.best.iteration_time(), sim::simulate_plan(costs, before).output.iteration_time);
}

TEST(Replan, KeepsWhatThePreviousPlanFixedForTheRun) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto whole = cluster::load_cluster("a100-v100-t4");
  plan::Plan before = first_plan(model, whole);
  before.runtime = plan::Framework::megatron;
  before.seq_len = 1024;
  const Replanned after = replan(before, model, whole, {0, 1, 2, 3, 4, 5, 6, 7}, nullptr);
  EXPECT_EQ(after.best.plan.runtime, plan::Framework::megatron);
  EXPECT_EQ(after.best.plan.seq_len, 1024);
  EXPECT_FALSE(plan::refusal(after.best.plan, plan::Framework::megatron).has_value());
}

TEST(Replan, NothingFittingOnWhatIsLeftSaysHowShortMemoryIs) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto whole = cluster::load_cluster("a100-v100-t4");
  const plan::Plan before = first_plan(model, whole);
  try {
    replan(before, model, whole, {12}, nullptr);  // one T4 (16 GB) for 2.7 B parameters
    FAIL() << "a plan fitted on one T4";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("GiB"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace hyperpipe::planner
