// What `launch` decides before any process starts: the ranks it runs and where they meet,
// the refusals of a run shared across hosts, and of a plan predicted not to fit.
#include "hyperpipe/launch/plan_launch.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "example_plans.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::launch {
namespace {

const std::string kExamples = HYPERPIPE_EXAMPLES;

PlanLaunch launch_of(const std::string& plan_path) {
  PlanLaunch launch;
  launch.plan_path = plan_path;
  launch.worker = "/path/to/hyperpipe-worker";
  launch.train_arguments = {"--data", "corpus.txt", "--steps", "3"};
  return launch;
}

// The message of the InputError `call` throws.
template <typename Call>
std::string refusal(Call call) {
  return hyperpipe::testing::error_message<InputError>(call);
}

TEST(PlanLaunch, EveryDeviceRunsTrainWithThePlanAndTheArgumentsPassedOn) {
  const std::string path = kExamples + "/plans/tiny-gpt-3stage.json";
  const auto checked = plan::load_checked_plan(path, std::nullopt);
  PlanLaunch launch = launch_of(path);
  EXPECT_NO_THROW(check_shared_run(checked.plan, launch));  // started whole: no port needed
  const LaunchSpec spec = launch_spec(checked.plan, launch);
  EXPECT_EQ(spec.processes, 3);
  EXPECT_EQ(spec.world_size, 3);
  EXPECT_EQ(spec.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(spec.command, (std::vector<std::string>{launch.worker, "train", "--plan", path,
                                                    "--data", "corpus.txt", "--steps", "3"}));
  EXPECT_EQ(spec.raw_stdout_rank, -1);
  EXPECT_FALSE(prints_json(launch));
  launch.train_arguments.push_back("--format=json");  // stdout: rank 0's document alone
  EXPECT_TRUE(prints_json(launch));
  EXPECT_EQ(launch_spec(checked.plan, launch).raw_stdout_rank, 0);
}

// A run whose devices several launchers start needs a port and a secret shared by every
// host, and switches plans only through the elastic leader.
TEST(PlanLaunch, ARunSharedAcrossHostsNeedsItsPortItsSecretAndTheLeaderToAdapt) {
  const std::string path = kExamples + "/plans/tiny-gpt-3stage.json";
  const auto checked = plan::load_checked_plan(path, std::nullopt);
  PlanLaunch launch = launch_of(path);
  launch.devices_here = {0};
  ::unsetenv(kJobTokenVariable);
  EXPECT_NE(refusal([&] { check_shared_run(checked.plan, launch); }).find("a --port"),
            std::string::npos);
  launch.port = 29500;
  EXPECT_NE(refusal([&] { check_shared_run(checked.plan, launch); }).find(kJobTokenVariable),
            std::string::npos);
  ::setenv(kJobTokenVariable, "0123456789abcdef", 1);
  launch.train_arguments.push_back("--adapt");
  EXPECT_NE(
      refusal([&] { check_shared_run(checked.plan, launch); }).find("--elastic beside --adapt"),
      std::string::npos);
  launch.elastic = true;
  EXPECT_NO_THROW(check_shared_run(checked.plan, launch));
  const LaunchSpec spec = launch_spec(checked.plan, launch);
  EXPECT_EQ(spec.ranks, (std::vector<int>{0}));
  EXPECT_EQ(spec.world_size, 3);
  EXPECT_EQ(spec.port, 29500);
  ::unsetenv(kJobTokenVariable);
}

// A plan that leaves (nearly) no device memory free is refused, naming a device and --force;
// --force launches it, and the same plan with no margin fits.
TEST(PlanLaunch, APlanPredictedNotToFitIsRefusedUnlessForced) {
  const std::string tight =
      hyperpipe::testing::example_plan_with_margin(0.95, "launch-margin-95.json");
  PlanLaunch launch = launch_of(tight);
  const auto over = plan::load_checked_plan(tight, std::nullopt);
  const std::string message = refusal([&] { check_fits(over, launch); });
  EXPECT_NE(message.find("--force"), std::string::npos) << message;
  EXPECT_NE(message.find("A100-40GB"), std::string::npos) << message;
  launch.force = true;
  EXPECT_NO_THROW(check_fits(over, launch));
  const std::string roomy =
      hyperpipe::testing::example_plan_with_margin(0.0, "launch-margin-0.json");
  EXPECT_NO_THROW(check_fits(plan::load_checked_plan(roomy, std::nullopt), launch_of(roomy)));
}

// Rank 0's launcher listens: a port another program holds is refused there, not elsewhere.
TEST(PlanLaunch, APortInUseIsRefusedWhereRankZeroListens) {
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&address), &length), 0);
  LaunchSpec spec;
  spec.port = ntohs(address.sin_port);
  spec.ranks = {0, 1};
  EXPECT_NE(refusal([&] { check_port_free(spec); }).find("is in use"), std::string::npos);
  spec.ranks = {1};  // rank 0 listens on another host
  EXPECT_NO_THROW(check_port_free(spec));
  ::close(held);
}

// From a help text in CLI11's layout, the entries (with their continuation lines) of the
// options section, less -h and the launcher's own.
TEST(PlanLaunch, TheOptionsPassedOnAreTheWorkersLessTheLaunchersOwn) {
  const std::string help =
      "Run one process\n"
      "Usage: hyperpipe-worker train [OPTIONS]\n"
      "\n"
      "Options:\n"
      "  -h,--help                   Print this help message and exit\n"
      "  --plan TEXT REQUIRED        Plan file\n"
      "  --steps INT:POSITIVE=10     Training steps\n"
      "  --eval-interval INT:NONNEGATIVE=0\n"
      "                              Every this many steps\n"
      "  -p,--port INT               Rendezvous port\n"
      "\n"
      "Examples: --not-an-option\n";
  EXPECT_EQ(options_without(help, {"--plan", "--port"}),
            "  --steps INT:POSITIVE=10     Training steps\n"
            "  --eval-interval INT:NONNEGATIVE=0\n"
            "                              Every this many steps\n");
  EXPECT_EQ(options_without(help, {}).find("--help"), std::string::npos);
  EXPECT_NE(options_without(help, {}).find("  -p,--port INT"), std::string::npos);
  EXPECT_EQ(options_without("Usage: x\n", {}), "");
}

}  // namespace
}  // namespace hyperpipe::launch
