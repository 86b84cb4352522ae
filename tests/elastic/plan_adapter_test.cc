#include "hyperpipe/elastic/plan_adapter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "test_files.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;

// Three H200s, one per node, for which tests/data has OPT-350m's per-layer profiles.
constexpr const char* kThreeH200s = R"(name: three-h200
nodes:
  - {name: h0, gpu: H200, count: 1}
  - {name: h1, gpu: H200, count: 1}
  - {name: h2, gpu: H200, count: 1}
links: {intra_island: {bandwidth: 50 GB/s, latency: 5 us}}
)";

struct Fixture {
  std::string dir = hyperpipe::testing::temp_path("plan-adapter");
  model::Model model = model::load_model(HYPERPIPE_TEST_DATA "/opt-350m-fp32.yaml");
  cost::ProfileDb profiles = cost::ProfileDb::load_for(
      HYPERPIPE_TEST_DATA "/opt-350m-h200-profiles.json", "opt-350m-fp32");
  cluster::Cluster cluster =
      cluster::read_cluster_yaml(YamlField::load_string(kThreeH200s, "three-h200"));
  plan::Plan plan;
  std::vector<double> expected;  // each rank's compute per step, by the simulator
  std::ostringstream log;

  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir + "/cluster.yaml") << kThreeH200s;
    plan.model = HYPERPIPE_TEST_DATA "/opt-350m-fp32.yaml";
    plan.cluster = dir + "/cluster.yaml";
    plan.micro_batch_size = 1;
    plan.micro_batches = 8;
    const int layers = model.num_layers();
    for (int s = 0; s < 3; ++s) {
      plan.stages.push_back(
          {layers * s / 3, layers * (s + 1) / 3, {s}, 1, 1, model::Recompute::none});
    }
    const cost::CostModel costs(model, cluster, {}, &profiles);
    for (const auto& rank : sim::simulate_plan(costs, plan).output.ranks) {
      expected.push_back(rank.busy);
    }
  }

  PlanAdapter adapter(int64_t steps) {
    return PlanAdapter(AdaptInputs{plan, dir + "/plan.json", model, cluster, std::nullopt, profiles,
                                   dir + "/elastic", steps, false},
                       AdaptSettings{}, log);
  }

  // The switch written for device 0 at `speed`, checked: a gain predicted; the layers the
  // adapted plan gives device 0.
  int layers_on_zero_after_switch(double speed) const {
    const auto decided = nlohmann::json::parse(std::ifstream(dir + "/elastic/" + kSwitchFile));
    EXPECT_NEAR(decided["speeds"]["0"].get<double>(), speed, 1e-9);
    EXPECT_LT(decided["predicted_iteration_s"]["after"].get<double>(),
              decided["predicted_iteration_s"]["before"].get<double>());
    const plan::Plan next = plan::load_plan(decided["plan"].get<std::string>());
    int on_zero = 0;
    for (const auto& stage : next.stages) {
      if (stage.devices == std::vector<int>{0}) on_zero += stage.end_layer - stage.first_layer;
    }
    return on_zero;
  }

  // The compute of a step with device 0 at `speed` of its profile.
  std::vector<double> step(double speed) const {
    std::vector<double> compute = expected;
    compute[0] /= speed;
    return compute;
  }
};

// An adapting run needs the profiles its plan was made for and a checkpoint directory to
// go on from; one that hands over on request needs the directory its launcher asks in.
TEST(PlanAdapter, AnAdaptingRunNeedsItsProfilesAndACheckpointDirectory) {
  EXPECT_NO_THROW(check_adapting_run(false, false, false, false));
  EXPECT_NO_THROW(check_adapting_run(true, true, true, true));
  EXPECT_THROW(check_adapting_run(true, false, false, true), InputError);
  EXPECT_THROW(check_adapting_run(true, false, true, false), InputError);
  EXPECT_NO_THROW(check_adapting_run(false, true, false, true));
  EXPECT_THROW(check_adapting_run(false, true, true, false), InputError);
}

TEST(PlanAdapter, DevicesAsFastAsTheirProfilesOrWithinTheThresholdChangeNothing) {
  Fixture f;
  PlanAdapter adapter = f.adapter(1000);
  for (int64_t s = 0; s < 40; ++s) {
    // Host noise: ±10% around the profile, under the 15% threshold.
    EXPECT_FALSE(adapter.measured(s, f.step(s % 2 ? 0.9 : 1.1), 1.0)) << s;
  }
  EXPECT_FALSE(fs::exists(f.dir + "/elastic/" + kSwitchFile));
}

TEST(PlanAdapter, ADeviceSlowForEnoughStepsIsPlannedAround) {
  Fixture f;
  PlanAdapter adapter = f.adapter(1000);
  // One slow step among fast ones is a hiccup.
  EXPECT_FALSE(adapter.measured(0, f.step(0.2), 1.0));
  EXPECT_FALSE(adapter.measured(1, f.step(1.0), 1.0));
  for (int64_t s = 2; s < 2 + kDefaultAdaptSteps - 1; ++s) {
    EXPECT_FALSE(adapter.measured(s, f.step(0.2), 1.0)) << s;
  }
  EXPECT_TRUE(adapter.measured(2 + kDefaultAdaptSteps - 1, f.step(0.2), 1.0)) << f.log.str();
  // The adapted plan gives device 0 fewer layers than the third it had.
  EXPECT_LT(f.layers_on_zero_after_switch(0.2), f.model.num_layers() / 3) << f.log.str();
}

TEST(PlanAdapter, ADeviceFasterThanItsProfileForEnoughStepsGetsMoreWork) {
  Fixture f;
  PlanAdapter adapter = f.adapter(1000);
  bool switched = false;
  for (int64_t s = 0; s < kDefaultAdaptSteps; ++s) {
    switched = adapter.measured(s, f.step(2.0), 1.0);
  }
  ASSERT_TRUE(switched) << f.log.str();
  // Device 0 at twice the others' speed takes more than the third of the layers it had.
  EXPECT_GT(f.layers_on_zero_after_switch(2.0), f.model.num_layers() / 3) << f.log.str();
}

TEST(PlanAdapter, KeepsThePlanWhenTheSwitchWouldNotPayBeforeTheEnd) {
  Fixture f;
  PlanAdapter adapter = f.adapter(kDefaultAdaptSteps + 3);  // two steps left after the switch
  bool switched = false;
  for (int64_t s = 0; s < kDefaultAdaptSteps; ++s) {
    switched = switched || adapter.measured(s, f.step(0.2), /*switch_cost=*/1000.0);
  }
  EXPECT_FALSE(switched);
  EXPECT_NE(f.log.str().find("does not pay for the switch before the run ends"), std::string::npos)
      << f.log.str();
}

// A device has drifted only when each of its last --adapt-steps speeds is off the one it was
// planned for by more than the threshold, all on one side.
TEST(PlanAdapter, ADriftIsEveryRecentStepOffTheSameWay) {
  const double threshold = 0.15;
  EXPECT_FALSE(drifted({0.5, 0.5}, 3, 1.0, threshold));  // too few steps yet
  EXPECT_TRUE(drifted({0.5, 0.8, 0.84}, 3, 1.0, threshold));
  EXPECT_FALSE(drifted({0.5, 0.8, 0.86}, 3, 1.0, threshold));  // the last within 15%
  EXPECT_TRUE(drifted({1.2, 1.16, 2.0}, 3, 1.0, threshold));
  EXPECT_FALSE(drifted({0.5, 0.5, 2.0}, 3, 1.0, threshold));  // slower, then faster
  // Against the speed already planned for, not the profile's.
  EXPECT_FALSE(drifted({0.5, 0.55, 0.45}, 3, 0.5, threshold));
  EXPECT_TRUE(drifted({0.9, 1.0, 0.95}, 3, 0.5, threshold));
  // Only the last `steps` count.
  EXPECT_TRUE(drifted({1.0, 0.5, 0.5, 0.5}, 3, 1.0, threshold));
}

// A switch pays when it gains --adapt-gain of the iteration and pays its cost back before
// the run ends.
TEST(PlanAdapter, ASwitchPaysWhenItGainsEnoughInTime) {
  // 1 s → 0.8 s: 0.2 s a step; a 10 s switch is paid back after 50 steps.
  auto verdict = switch_verdict(1.0, 0.8, 10.0, 51, 0.05);
  EXPECT_TRUE(verdict.pays);
  EXPECT_DOUBLE_EQ(verdict.payback_steps, 50);
  verdict = switch_verdict(1.0, 0.8, 10.0, 50, 0.05);
  EXPECT_FALSE(verdict.pays);
  EXPECT_EQ(verdict.why_not, "does not pay for the switch before the run ends");
  verdict = switch_verdict(1.0, 0.96, 0.0, 1000, 0.05);  // 4% faster, free: still too little
  EXPECT_FALSE(verdict.pays);
  EXPECT_EQ(verdict.why_not, "is under --adapt-gain 5%");
  verdict = switch_verdict(1.0, 1.1, 0.0, 1000, 0.0);  // slower: never pays
  EXPECT_FALSE(verdict.pays);
  EXPECT_TRUE(std::isinf(verdict.payback_steps));
}

}  // namespace
}  // namespace hyperpipe::elastic
