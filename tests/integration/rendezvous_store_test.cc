// Rank 0's rendezvous store listens where the run's other ranks reach it (MASTER_ADDR's
// interface: store_listener_test.cc, tests/netlab/lab_smoke_test.sh), which an outsider on
// that network may reach too. What the run reads there lives under the job's secret, so an
// outsider who writes the keys a run once read stops nothing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
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

// A store host that takes connections and drops them (rank 0 gone while the others join):
// the joining rank says which it is and where it was joining, not "internal error".
TEST(RendezvousStore, ARankWhoseStoreGoesWhileJoiningNamesItself) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // any free port
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  std::atomic<bool> done{false};
  std::thread dropper([&] {
    while (!done) {
      pollfd ready{listener, POLLIN, 0};
      if (poll(&ready, 1, 100) > 0) close(accept(listener, nullptr, nullptr));
    }
  });
  const std::string dir = prepare("dropped-store", kTinyGpt, kThreeStages);
  const pid_t worker =
      start_worker(dir + "/plan.json", 1, 3, port,
                   fmt::format("--data {} --steps 1 --timeout 5", kCorpus), dir + "/log.txt");
  const int code = wait_for(worker, 60);
  if (code < 0) kill(worker, SIGKILL);
  done = true;
  dropper.join();
  close(listener);
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(
      log.find(fmt::format("rank 1: joining the run at 127.0.0.1:{} (3 processes) failed: ", port)),
      std::string::npos)
      << log;
  EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
}

}  // namespace
}  // namespace hyperpipe::runtime
