// Slow is not dead: a peer deep in a long step keeps its heartbeat and is waited for,
// however long the step; a frozen peer is named by the ranks that notice; a rendezvous
// that times out names the ranks that never came.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hyperpipe/launch/process_launcher.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// A 32,000-token vocabulary over 4,096 tokens a step: the head's step takes seconds on a
// CPU (2.4 s on the development machine), longer than the one-second timeout below.
const char* kWideHeadGpt =
    "name: wide-head\nflavour: gpt\nhidden: 128\nlayers: 2\nheads: 2\nvocab: 32000\n"
    "seq_len: 128\ndropout: false\ndtype: fp32\n";
const char* kHeadApart =
    R"("micro_batch_size": 8, "micro_batches": 4, "schedule": "1f1b",
       "stages": [{"layers": [0, 3], "devices": [0]}, {"layers": [3, 4], "devices": [1]}])";

TEST(SlowPeer, AStepLongerThanTheTimeoutIsWaitedFor) {
  const std::string dir = prepare("slow-step", kWideHeadGpt, kHeadApart);
  const int code = run_command(fmt::format(
      "{} launch --plan {}/plan.json --data {} --steps 1 --timeout 1 --metrics {}/m.jsonl > "
      "{}/log.txt 2>&1",
      kBinary, dir, kCorpus, dir, dir));
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log;
  const auto metrics = nlohmann::json::parse(slurp(dir + "/m.jsonl"));
  EXPECT_GT(metrics["seconds"].get<double>(), 1.0) << "the step no longer outlasts the timeout";
}

TEST(SlowPeer, AFrozenPeerIsNamedByTheOthers) {
  const std::string dir = prepare("frozen-peer", kTinyGpt, kThreeStages);
  const int port = launch::free_port();
  const std::string options = fmt::format(
      "--data {} --steps 100000 --timeout 2 --checkpoint-dir {}/checkpoints --checkpoint-every 2",
      kCorpus, dir);
  std::vector<pid_t> workers;
  for (int rank = 0; rank < 3; ++rank) {
    workers.push_back(start_worker(dir + "/plan.json", rank, 3, port, options,
                                   fmt::format("{}/rank{}.log", dir, rank)));
  }
  // Joined and training: its first checkpoint written (a fixed wait is too short for
  // three libtorch processes to start on a loaded two-core host).
  if (!wait_for_checkpoint(dir + "/checkpoints", 60)) {
    for (const pid_t worker : workers) {
      kill(worker, SIGKILL);
      waitpid(worker, nullptr, 0);
    }
    FAIL() << "no checkpoint within a minute: " << slurp(dir + "/rank0.log");
  }
  kill(workers[1], SIGSTOP);  // alive, but its heart stops
  for (const int rank : {0, 2}) {
    const int code = wait_for(workers[rank], 30);
    if (code < 0) kill(workers[rank], SIGKILL);
    EXPECT_GT(code, 0) << "rank " << rank << " still waits for a frozen peer";
    const std::string log = slurp(fmt::format("{}/rank{}.log", dir, rank));
    EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  }
  const std::string logs = slurp(dir + "/rank0.log") + slurp(dir + "/rank2.log");
  EXPECT_NE(logs.find("no heartbeat from rank 1"), std::string::npos) << logs;
  kill(workers[1], SIGKILL);
  kill(workers[1], SIGCONT);
  waitpid(workers[1], nullptr, 0);
}

TEST(SlowPeer, ARendezvousThatTimesOutNamesWhoNeverCame) {
  const std::string dir = prepare("never-joined", kTinyGpt, kThreeStages);
  const int code = run_command(fmt::format(
      "RANK=0 WORLD_SIZE=3 MASTER_PORT={} {} train --plan {}/plan.json --data {} --timeout 1 > "
      "{}/log.txt 2>&1",
      launch::free_port(), kBinary, dir, kCorpus, dir));
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(code, 0);
  EXPECT_NE(log.find("rank 0: ranks 1,2 never joined the run"), std::string::npos) << log;
}

}  // namespace
}  // namespace hyperpipe::runtime
