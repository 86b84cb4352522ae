#include "hyperpipe/elastic/supervisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/elastic/hosts.h"
#include "hyperpipe/model/catalogue.h"
#include "test_files.h"

namespace hyperpipe::elastic {
namespace {

// Two A100s (devices 0, 1) and two T4s (2, 3): an offered A100 makes a much faster plan
// than two T4s alone.
constexpr const char* kAmpereAndTuring = R"(name: ampere-and-turing
nodes:
  - {name: a, gpu: A100-40GB, count: 2}
  - {name: t, gpu: T4, count: 2}
links:
  intra_node: {bandwidth: 300 GB/s, latency: 2 us}
  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}
)";

std::vector<int> devices_of(const plan::Plan& plan) {
  auto devices = plan::devices_in_rank_order(plan);
  std::sort(devices.begin(), devices.end());
  return devices;
}

struct AmpereAndTuringRun {
  model::Model model{*model::find_catalogue_model("gpt2")};
  cluster::Cluster cluster =
      cluster::read_cluster_yaml(YamlField::load_string(kAmpereAndTuring, "ampere-and-turing"));
  std::ostringstream log;

  // One stage per device of `devices` (every device when empty), layers split evenly,
  // named as a run names it: a plan the run could have started with.
  plan::Plan plan_of(std::vector<int> devices = {0, 1, 2, 3}) const {
    plan::Plan plan;
    plan.model = "models/gpt2.yaml";
    plan.cluster = "clusters/ampere-and-turing.yaml";
    plan.micro_batch_size = 1;
    plan.micro_batches = 8;
    const int layers = model.num_layers();
    const int stages = static_cast<int>(devices.size());
    for (int s = 0; s < stages; ++s) {
      plan.stages.push_back({layers * s / stages,
                             layers * (s + 1) / stages,
                             {devices[s]},
                             1,
                             1,
                             model::Recompute::none});
    }
    return plan;
  }

  Supervisor supervisor(plan::Plan plan, SupervisorRules rules = {}) {
    return Supervisor({std::move(plan), model, cluster, std::nullopt}, rules, log);
  }
};

// A loss counts a restart and plans the devices left, naming the first plan's model and
// cluster; once --max-restarts are used up the next loss ends the run with its exit code.
TEST(Supervisor, ALossIsPlannedAroundUntilTheRestartsAreUsedUp) {
  AmpereAndTuringRun f;
  const plan::Plan first = f.plan_of();
  ASSERT_EQ(devices_of(first), (std::vector<int>{0, 1, 2, 3}));
  SupervisorRules rules;
  rules.max_restarts = 1;
  Supervisor supervisor = f.supervisor(first, rules);
  const PlanChange change = supervisor.lose({3}, "rank 3 (device 3, T4)", "exit code 1", 1);
  const auto now = devices_of(change.replanned.plan);
  EXPECT_EQ(std::count(now.begin(), now.end(), 3), 0);
  EXPECT_TRUE(std::includes(supervisor.available().begin(), supervisor.available().end(),
                            now.begin(), now.end()));
  EXPECT_EQ(devices_of(supervisor.plan()), now);
  EXPECT_EQ(supervisor.available(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(supervisor.losses(), 1);
  EXPECT_DOUBLE_EQ(change.before, supervisor.predicted_iteration(first));
  EXPECT_EQ(supervisor.plan().model, first.model);
  EXPECT_EQ(supervisor.plan().cluster, first.cluster);
  EXPECT_NE(f.log.str().find("rank 3 (device 3, T4) was lost (exit code 1); 3 devices left: "),
            std::string::npos)
      << f.log.str();
  try {
    supervisor.lose({2}, "rank 2", "exit code 137", 137);
    FAIL() << "the second loss is past --max-restarts 1";
  } catch (const CommandFailed& error) {
    EXPECT_EQ(error.code(), 137);
    EXPECT_NE(std::string(error.what()).find("the 1 restart --max-restarts allows are used up"),
              std::string::npos)
        << error.what();
  }
  // Ended there: the devices it had are as they were.
  EXPECT_EQ(supervisor.available(), (std::vector<int>{0, 1, 2}));
}

// Fewer devices left than --min-devices end the run; more than the plan has are refused
// before it starts.
TEST(Supervisor, TheRunEndsBelowMinDevices) {
  AmpereAndTuringRun f;
  SupervisorRules rules;
  rules.min_devices = 3;
  Supervisor supervisor = f.supervisor(f.plan_of(), rules);
  supervisor.lose({3}, "rank 3", "exit code 1", 1);
  try {
    supervisor.lose({1}, "rank 1", "exit code 1", 9);
    FAIL() << "two devices are fewer than --min-devices 3";
  } catch (const CommandFailed& error) {
    EXPECT_EQ(error.code(), 9);
    EXPECT_NE(std::string(error.what()).find("2 devices left, fewer than --min-devices 3"),
              std::string::npos)
        << error.what();
  }
  rules.min_devices = 5;
  EXPECT_THROW(f.supervisor(f.plan_of(), rules), InputError);
}

// A device keeps the process slot (its GPU, LOCAL_RANK) it first had, through a loss and an
// offer back; a device new to the run takes the next slot.
TEST(Supervisor, ADeviceKeepsItsSlot) {
  AmpereAndTuringRun f;
  const plan::Plan first = f.plan_of({1, 2, 3});
  const auto order = plan::devices_in_rank_order(first);
  Supervisor supervisor = f.supervisor(first);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    EXPECT_EQ(supervisor.local_rank(order[rank]), static_cast<int>(rank));
  }
  supervisor.lose({order[0]}, "rank 0", "exit code 1", 1);
  supervisor.start();
  EXPECT_TRUE(supervisor.offer(order[0]).answer.accepted);
  EXPECT_EQ(supervisor.local_rank(order[0]), 0);
  EXPECT_TRUE(supervisor.offer(0).answer.accepted);
  EXPECT_EQ(supervisor.local_rank(0), 3);
}

// Across hosts the run starts with the leader's devices; an offer before the first round
// puts a device in the run from its start, with no hand-over.
TEST(Supervisor, AnOfferBeforeTheStartIsInTheRunFromItsStart) {
  AmpereAndTuringRun f;
  Supervisor supervisor = f.supervisor(f.plan_of());
  supervisor.start_with({1, 0});
  EXPECT_EQ(supervisor.available(), (std::vector<int>{0, 1}));
  const auto missing = supervisor.missing();
  EXPECT_EQ(std::set<int>(missing.begin(), missing.end()), (std::set<int>{2, 3}));
  const Offered offered = supervisor.offer(3);
  EXPECT_TRUE(offered.answer.accepted);
  EXPECT_EQ(offered.answer.message, "in the run from its start");
  EXPECT_FALSE(offered.hand_over);
  EXPECT_EQ(supervisor.missing(), (std::vector<int>{2}));
  EXPECT_TRUE(supervisor.joined().empty());
}

// After the start, an offered device whose plan is --adapt-gain faster hands over at the next
// checkpoint, and the plan made then has it; one that gains less stays a spare.
TEST(Supervisor, AnOfferHandsOverOnlyWhenItsPlanGainsEnough) {
  AmpereAndTuringRun f;
  const plan::Plan two_t4s = f.plan_of({2, 3});
  SupervisorRules rules;
  rules.checkpoint_every = 10;
  Supervisor supervisor = f.supervisor(two_t4s, rules);
  supervisor.start();
  const Offered offered = supervisor.offer(0);
  EXPECT_TRUE(offered.answer.accepted);
  ASSERT_TRUE(offered.hand_over) << offered.answer.message;
  EXPECT_NE(offered.hand_over->find("device 0 joined"), std::string::npos);
  EXPECT_NE(offered.answer.message.find("after its next checkpoint (every 10 steps)"),
            std::string::npos)
      << offered.answer.message;
  EXPECT_EQ(supervisor.joined(), (std::vector<int>{0}));
  const PlanChange change = supervisor.take_joined();
  EXPECT_NE(devices_of(change.replanned.plan), devices_of(two_t4s));
  EXPECT_LT(change.replanned.iteration_time, change.before * (1 - rules.join_gain));
  EXPECT_DOUBLE_EQ(change.before, supervisor.predicted_iteration(two_t4s));
  EXPECT_TRUE(supervisor.joined().empty());

  rules.join_gain = 0.99;  // no plan is 99% faster
  Supervisor demanding = f.supervisor(two_t4s, rules);
  demanding.start();
  const Offered spare = demanding.offer(0);
  EXPECT_TRUE(spare.answer.accepted);
  EXPECT_FALSE(spare.hand_over);
  EXPECT_NE(spare.answer.message.find("kept as a spare"), std::string::npos);
  EXPECT_EQ(demanding.available(), (std::vector<int>{0, 2, 3}));
}

// A device already in the run, or not in its cluster, is refused and changes nothing; an
// agent that goes takes its devices with it.
TEST(Supervisor, RefusedOffersAndWithdrawnDevicesAreNotTheRuns) {
  AmpereAndTuringRun f;
  Supervisor supervisor = f.supervisor(f.plan_of({2, 3}));
  supervisor.start();
  Offered offered = supervisor.offer(2);
  EXPECT_FALSE(offered.answer.accepted);
  EXPECT_NE(offered.answer.message.find("device 2 is in the run already"), std::string::npos);
  offered = supervisor.offer(7);
  EXPECT_FALSE(offered.answer.accepted);
  EXPECT_EQ(supervisor.available(), (std::vector<int>{2, 3}));
  supervisor.offer(1);
  supervisor.withdraw({1, 3});
  EXPECT_EQ(supervisor.available(), (std::vector<int>{2}));
  EXPECT_TRUE(supervisor.joined().empty());
}

// Devices no agent offered by --host-wait are planned without, down to --min-devices.
TEST(Supervisor, DevicesNoAgentOfferedArePlannedWithout) {
  AmpereAndTuringRun f;
  Supervisor supervisor = f.supervisor(f.plan_of());
  supervisor.start_with({0, 1});
  const PlanChange change = supervisor.go_on_without_missing(60);
  const auto now = devices_of(change.replanned.plan);
  EXPECT_TRUE(std::includes(supervisor.available().begin(), supervisor.available().end(),
                            now.begin(), now.end()));
  EXPECT_EQ(supervisor.available(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(supervisor.missing().empty());

  SupervisorRules rules;
  rules.min_devices = 3;
  Supervisor short_of_devices = f.supervisor(f.plan_of(), rules);
  short_of_devices.start_with({0, 1});
  EXPECT_THROW(short_of_devices.go_on_without_missing(60), CommandFailed);
}

// A join request is this launcher's to answer on one machine, or across hosts for a device
// of its own host; one another agent has, or no host has, is refused saying where to offer.
TEST(Supervisor, AJoinIsRoutedToTheHostThatHasTheDevice) {
  EXPECT_FALSE(join_route_refusal(3, false, std::nullopt));
  EXPECT_FALSE(join_route_refusal(3, true, std::string(kLeaderName)));
  EXPECT_EQ(join_route_refusal(3, true, std::string("host-b")),
            "device 3 is on host host-b, whose agent offers it");
  EXPECT_NE(join_route_refusal(3, true, std::nullopt)->find("hyperpipe agent --devices 3"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::elastic
