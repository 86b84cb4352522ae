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

// a100-v100-t4's islands and links, as its file has them.
constexpr const char* kIslandsAndLinks = R"(
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

// a100-v100-t4 after losing A100 1 and V100s 3 and 7, written by hand.
constexpr const char* kWhatIsLeft = R"(
name: a100-v100-t4
nodes:
  - {name: a100-0, gpu: A100-40GB, count: 3}
  - {name: v100-0, gpu: V100-16GB, count: 6}
  - {name: t4-0, gpu: T4, count: 4}
)";

plan::Plan first_plan(const model::Model& model, const cluster::Cluster& cluster) {
  const cost::CostModel costs(model, cluster);
  PlanRequest request;
  request.batch = {"gpt3-2.7b", "a100-v100-t4", 64, 0, micro_batch_sizes(64)};
  return make_plan(costs, request).best.plan;
}

// The best plan's iteration on a100-v100-t4's islands and links with `nodes` (and types).
double hand_written_best(const model::Model& model, const char* nodes) {
  const auto cluster = cluster::read_cluster_yaml(
      YamlField::load_string(std::string(nodes) + kIslandsAndLinks, "hand-written"));
  const cost::CostModel costs(model, cluster);
  PlanRequest request;
  request.batch = {"gpt3-2.7b", "hand-written", 64, 0, micro_batch_sizes(64)};
  return make_plan(costs, request).best.iteration_time();
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
  EXPECT_TRUE(after.fits);
  EXPECT_EQ(after.plan.global_batch(), before.global_batch());
  EXPECT_FALSE(plan::refusal(after.plan, plan::Framework::hyperpipe).has_value());
  // Only devices that are left, each once.
  std::set<int> used;
  for (int p = 0; p < after.plan.pipeline_count(); ++p) {
    const auto& pipeline = after.plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {
      for (int device : pipeline.stages[r].devices) {
        EXPECT_TRUE(std::find(left.begin(), left.end(), device) != left.end()) << device;
        EXPECT_TRUE(used.insert(device).second) << device;
      }
    }
  }
  // The same iteration as planning the hand-written cluster of what is left.
  const double reference = hand_written_best(model, kWhatIsLeft);
  EXPECT_NEAR(after.iteration_time, reference, 1e-9 * reference);
  // Fewer devices: no faster than before.
  const cost::CostModel costs(model, whole);
  EXPECT_GE(after.iteration_time, sim::simulate_plan(costs, before).output.iteration_time);
}

TEST(Replan, KeepsWhatThePreviousPlanFixedForTheRun) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto whole = cluster::load_cluster("a100-v100-t4");
  plan::Plan before = first_plan(model, whole);
  before.runtime = plan::Framework::megatron;
  before.seq_len = 1024;
  const Replanned after = replan(before, model, whole, {0, 1, 2, 3, 4, 5, 6, 7}, nullptr);
  EXPECT_EQ(after.plan.runtime, plan::Framework::megatron);
  EXPECT_EQ(after.plan.seq_len, 1024);
  EXPECT_FALSE(plan::refusal(after.plan, plan::Framework::megatron).has_value());
}

// a100-v100-t4 with its A100s at half their datasheet's speed, written by hand.
constexpr const char* kHalfSpeedA100s = R"(
name: a100-v100-t4
gpu_types:
  - {name: A100-40GB, peak: {fp32: 9.75, tf32: 78, fp16: 156, bf16: 156},
     memory_bandwidth: 777.5 GB/s}
nodes:
  - {name: a100-0, gpu: A100-40GB, count: 4}
  - {name: v100-0, gpu: V100-16GB, count: 8}
  - {name: t4-0, gpu: T4, count: 4}
)";

TEST(Replan, PlansSlowedDevicesAsATypeOfTheirSpeed) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto whole = cluster::load_cluster("a100-v100-t4");
  const plan::Plan before = first_plan(model, whole);
  std::vector<int> every(16);
  for (int id = 0; id < 16; ++id) every[id] = id;
  const DeviceSpeeds half{{0, 0.5}, {1, 0.5}, {2, 0.5}, {3, 0.5}};
  const Replanned after = replan(before, model, whole, every, nullptr, half);
  EXPECT_TRUE(after.fits);
  // The same iteration as planning the hand-written cluster of half-speed A100s.
  const double reference = hand_written_best(model, kHalfSpeedA100s);
  EXPECT_NEAR(after.iteration_time, reference, 1e-9 * reference);
  // The old plan at those speeds: slower than before, and no faster than the new one.
  const double old_at_half = predicted_iteration(before, model, whole, nullptr, half);
  EXPECT_GT(old_at_half, predicted_iteration(before, model, whole, nullptr));
  EXPECT_LE(after.iteration_time, old_at_half * (1 + 1e-9));
  // At full speed nothing changes: the same prediction as simulating the plan itself.
  const cost::CostModel costs(model, whole);
  EXPECT_DOUBLE_EQ(predicted_iteration(before, model, whole, nullptr),
                   sim::simulate_plan(costs, before).output.iteration_time);
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
