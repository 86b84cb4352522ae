#include "hyperpipe/planner/peer_spaces.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

// GPT-3 2.7B on the A100 + V100 + T4 example, global batch 64.
class PeerSpaces : public ::testing::Test {
 protected:
  PeerSpaces()
      : model_(model::load_model("gpt3-2.7b")),
        cluster_(cluster::load_cluster("a100-v100-t4")),
        costs_(model_, cluster_) {
    batch_ = {"gpt3-2.7b", "a100-v100-t4", 64, 0, micro_batch_sizes(64)};
  }

  ScoredPlan best(PeerSpace space) {
    auto found = best_of_peer_space(costs_, batch_, space);
    EXPECT_TRUE(found && found->fits) << to_string(space);
    return found ? *found : ScoredPlan{};
  }

  // Decoder blocks of each stage (the embedding and the head not counted).
  std::vector<int> blocks(const plan::Plan& plan) const {
    std::vector<int> counts;
    for (const auto& stage : plan.stages) {
      counts.push_back(stage.end_layer - stage.first_layer - (stage.first_layer == 0) -
                       (stage.end_layer == model_.num_layers()));
    }
    return counts;
  }

  int devices_used(const plan::Plan& plan) const {
    int used = 0;
    for (const auto& stage : plan.stages) used += static_cast<int>(stage.devices.size());
    return used;
  }

  model::Model model_;
  cluster::Cluster cluster_;
  cost::CostModel costs_;
  BatchSettings batch_;
};

TEST_F(PeerSpaces, SailorKeepsOneDpTpAtMostFourAndEvenBlocks) {
  const auto plan = best(PeerSpace::sailor).plan;
  ASSERT_FALSE(plan.stages.empty());
  EXPECT_EQ(plan.schedule, schedule::ScheduleKind::one_f_one_b);
  const auto counts = blocks(plan);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    EXPECT_EQ(plan.stages[s].dp, plan.stages[0].dp);
    EXPECT_LE(plan.stages[s].tp, 4);
    EXPECT_LE(std::abs(counts[s] - counts[0]), 1);  // as even as the blocks allow
  }
}

TEST_F(PeerSpaces, MetisUsesEveryDeviceOrderedByMemoryWithBlocksByCapability) {
  const auto plan = best(PeerSpace::metis).plan;
  ASSERT_FALSE(plan.stages.empty());
  EXPECT_EQ(devices_used(plan), static_cast<int>(cluster_.devices().size()));
  double memory = 1e300;
  const auto counts = blocks(plan);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const int device = plan.stages[s].devices.front();
    EXPECT_LE(cluster_.device_memory(device), memory) << "stage " << s;  // largest first
    memory = cluster_.device_memory(device);
  }
  // Faster groups hold more blocks: the A100 stages more than the T4 ones.
  std::map<std::string, int> most;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    auto& entry = most[cluster_.device_type(plan.stages[s].devices.front()).name];
    entry = std::max(entry, counts[s]);
  }
  EXPECT_GT(most["A100-40GB"], most["T4"]);
}

TEST_F(PeerSpaces, AmpRunsOneMeshOnEveryStageOverEveryDevice) {
  const auto plan = best(PeerSpace::amp).plan;
  ASSERT_FALSE(plan.stages.empty());
  EXPECT_EQ(devices_used(plan), static_cast<int>(cluster_.devices().size()));
  for (const auto& stage : plan.stages) {
    EXPECT_EQ(stage.dp, plan.stages[0].dp);
    EXPECT_EQ(stage.tp, plan.stages[0].tp);
  }
}

// Every peer's space lies inside HyperPipe's: the planner is never slower than any.
TEST_F(PeerSpaces, PlannerIsNeverSlowerThanAnyPeer) {
  PlanRequest request;
  request.batch = batch_;
  request.peers = true;
  const PlanResult result = make_plan(costs_, request);
  ASSERT_EQ(result.peers.size(), 3u);
  for (const auto& peer : result.peers) {
    if (peer.fits) {
      EXPECT_LE(result.best.iteration_time(), peer.iteration_time()) << peer.label;
    }
  }
}

}  // namespace
}  // namespace hyperpipe::planner
