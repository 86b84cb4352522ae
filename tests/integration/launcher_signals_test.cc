// `hyperpipe launch` and its workers under signals: a Ctrl-C or SIGTERM to the launcher
// stops every worker after a whole step with an intact checkpoint, and workers whose
// launcher is killed outright do not train on as orphans.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "hyperpipe/runtime/checkpoint.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// Gone, or a zombie no one has reaped yet: either way no longer running.
bool stopped(pid_t pid) {
  const char state = parent_and_state(pid).second;
  return state == 0 || state == 'Z' || state == 'X';
}

bool all_stopped_within(const std::vector<pid_t>& pids, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (pid_t pid : pids) all = all && stopped(pid);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A long run with a checkpoint every other step; returns the launcher's pid once a
// checkpoint is complete, with its workers in `workers`.
pid_t start_long_run(const std::string& dir, std::vector<pid_t>& workers) {
  const pid_t launcher = start_launcher(
      dir,
      fmt::format("--data {} --steps 100000 --timeout 20 --checkpoint-dir {}/checkpoints "
                  "--checkpoint-every 2",
                  kCorpus, dir),
      dir + "/log.txt");
  wait_for_checkpoint(dir + "/checkpoints", 90);
  workers = children_of(launcher);
  return launcher;
}

class SignalToLauncher : public ::testing::TestWithParam<int> {};

TEST_P(SignalToLauncher, StopsEveryWorkerAfterAWholeStepWithItsCheckpoint) {
  const int signal_number = GetParam();
  const std::string dir = prepare(fmt::format("signal{}", signal_number), kTinyGpt, kThreeStages);
  std::vector<pid_t> workers;
  const pid_t launcher = start_long_run(dir, workers);
  ASSERT_TRUE(latest_checkpoint(dir + "/checkpoints").has_value()) << slurp(dir + "/log.txt");
  ASSERT_EQ(workers.size(), 3u);
  kill(launcher, signal_number);
  const int code = wait_for(launcher, 30);
  if (code < 0) kill(launcher, SIGKILL);
  EXPECT_EQ(code, 128 + signal_number) << slurp(dir + "/log.txt");
  EXPECT_TRUE(all_stopped_within(workers, 5));
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("stopped by " + std::string(signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
                     " after step"),
            std::string::npos)
      << log;
  // The step it stopped after is checkpointed, whole (latest_checkpoint checks the CRC-32
  // of every file), and nothing half-written is left behind.
  const auto checkpoint = latest_checkpoint(dir + "/checkpoints");
  ASSERT_TRUE(checkpoint.has_value());
  EXPECT_NE(log.find(fmt::format("after step {}; checkpoint", checkpoint->steps_done)),
            std::string::npos)
      << log;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/checkpoints")) {
    EXPECT_EQ(entry.path().string().find(".partial"), std::string::npos) << entry.path();
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalToLauncher, ::testing::Values(SIGINT, SIGTERM));

TEST(KilledLauncher, ItsWorkersStopToo) {
  const std::string dir = prepare("killed-launcher", kTinyGpt, kThreeStages);
  std::vector<pid_t> workers;
  const pid_t launcher = start_long_run(dir, workers);
  ASSERT_EQ(workers.size(), 3u) << slurp(dir + "/log.txt");
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  // Each worker gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and stops at its next step.
  const bool all = all_stopped_within(workers, 20);
  if (!all) {
    for (pid_t worker : workers) kill(worker, SIGKILL);  // ours: started by our launcher
  }
  EXPECT_TRUE(all) << "workers outlived their launcher";
  EXPECT_TRUE(latest_checkpoint(dir + "/checkpoints").has_value());
}

}  // namespace
}  // namespace hyperpipe::runtime
