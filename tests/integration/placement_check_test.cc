// Processes of one node of the cluster file on two hosts: every process refuses to train,
// naming the node and both ranks' hosts; --no-placement-check lets them. The second host
// is this machine under another host name (a UTS namespace; needs root).
#include <gtest/gtest.h>

#include "hyperpipe/launch/process_launcher.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// Rank `rank` of 2, under the host name `host` where given.
pid_t start_on(const std::string& dir, int rank, int port, const std::string& host,
               const std::string& options) {
  const std::string train = fmt::format(
      "RANK={} WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={} exec {} train --plan "
      "{}/plan.json --data {} --steps 1 --timeout 20 {} > {}/rank{}.txt 2>&1",
      rank, port, kBinary, dir, kCorpus, options, dir, rank);
  const std::string command =
      host.empty() ? train
                   : fmt::format("exec unshare --uts sh -c 'hostname {} && {}'", host, train);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  return pid;
}

TEST(PlacementCheck, OneNodesProcessesOnTwoHostsAreRefused) {
  if (run_command("unshare --uts true 2>/dev/null") != 0) {
    GTEST_SKIP() << "no UTS namespace here (needs root): cannot make a second host name";
  }
  // Both devices are on a100x8's one node.
  const std::string dir = prepare("placement", kTinyGpt, kTwoStages);
  for (const bool checked : {true, false}) {
    const int port = launch::free_port();
    const std::string options = checked ? "" : "--no-placement-check";
    const pid_t first = start_on(dir, 0, port, "", options);
    const pid_t second = start_on(dir, 1, port, "hyperpipe-other-host", options);
    const int first_code = wait_for(first, 60);
    const int second_code = wait_for(second, 60);
    if (first_code < 0) kill(first, SIGKILL);
    if (second_code < 0) kill(second, SIGKILL);
    const std::string log = slurp(dir + "/rank0.txt") + slurp(dir + "/rank1.txt");
    if (!checked) {
      EXPECT_EQ(first_code, 0) << log;
      EXPECT_EQ(second_code, 0) << log;
      continue;
    }
    EXPECT_EQ(first_code, 2) << log;
    EXPECT_EQ(second_code, 2) << log;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string own = slurp(fmt::format("{}/rank{}.txt", dir, rank));
      EXPECT_NE(own.find("plan.json: stages: the devices of node dgx-0 on one host, but rank 1 "
                         "(device 1) runs on hyperpipe-other-host and rank 0 on "),
                std::string::npos)
          << own;
    }
  }
}

}  // namespace
}  // namespace hyperpipe::runtime
