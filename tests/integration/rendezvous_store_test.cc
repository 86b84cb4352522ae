// Rank 0's rendezvous store listens where anyone on the network may reach it (libtorch
// 1.13's TCPStore binds every interface). What the run reads there lives under the job's
// secret, so an outsider who writes the keys a run once read stops nothing.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

TEST(RendezvousStore, AnOutsiderCannotStopTheRun) {
  const std::string dir = prepare("outsider", kTinyGpt, kTwoStages);
  const int port = launch::free_port();
  const pid_t launcher = start_launcher(
      dir,
      fmt::format("--port {} --data {} --steps 40 --timeout 20 --checkpoint-dir {}/checkpoints "
                  "--checkpoint-every 2",
                  port, kCorpus, dir),
      dir + "/log.txt");
  wait_for_checkpoint(dir + "/checkpoints", 60);
  ASSERT_TRUE(latest_checkpoint(dir + "/checkpoints").has_value()) << slurp(dir + "/log.txt");
  // What a run without a secret read: the failure report, plain and under an empty token.
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(5);
  c10d::TCPStore outsider("127.0.0.1", options);
  const std::string text = "\x1b[2Jrank 9 owned you";
  for (const std::string key : {"failure", "job/failure", "job//failure"}) {
    outsider.set(key, std::vector<uint8_t>(text.begin(), text.end()));
  }
  const int code = wait_for(launcher, 120);
  if (code < 0) kill(launcher, SIGKILL);
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_EQ(code, 0) << log;
  EXPECT_EQ(log.find("owned you"), std::string::npos) << log;
  EXPECT_NE(log.find("step 40/40"), std::string::npos) << log;
}

}  // namespace
}  // namespace hyperpipe::runtime
