#include "hyperpipe/launch/process_launcher.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "test_files.h"

namespace hyperpipe::launch {
namespace {

LaunchSpec shell(const std::string& script, int processes) {
  LaunchSpec spec;
  spec.command = {"/bin/sh", "-c", script};
  spec.processes = processes;
  return spec;
}

TEST(ProcessLauncher, EachRankGetsItsRendezvousAndItsOutputIsPrefixed) {
  std::ostringstream out;
  std::ostringstream err;
  auto spec = shell(
      "echo rank $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT $EXTRA; "
      "echo oops >&2",
      3);
  spec.port = 31234;
  spec.environment["EXTRA"] = "x";
  const auto result = launch_processes(spec, out, err);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.failed_rank, -1);
  EXPECT_EQ(result.codes, (std::vector<int>{0, 0, 0}));
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(out.str().find("[rank " + std::to_string(rank) + "] rank " + std::to_string(rank) +
                             " of 3 at 127.0.0.1:31234 x\n"),
              std::string::npos)
        << out.str();
    EXPECT_NE(err.str().find("[rank " + std::to_string(rank) + "] oops\n"), std::string::npos);
  }
}

// One host's launcher of a run across hosts: its processes are ranks 3 and 1 of 5.
TEST(ProcessLauncher, ALaunchersShareOfARunAcrossHostsHasTheRunsRanks) {
  std::ostringstream out;
  std::ostringstream err;
  // Rank 1 fails once rank 3 has printed (a marker file says so): the failure stops rank 3,
  // and a rank 3 not yet started that far would print nothing.
  const std::string marker = hyperpipe::testing::temp_path("rank-3-printed");
  std::remove(marker.c_str());
  auto spec = shell(
      "echo rank $RANK of $WORLD_SIZE, $LOCAL_RANK of $LOCAL_WORLD_SIZE here; "
      "if [ $RANK = 3 ]; then touch $MARKER; exec sleep 60; fi; "
      "while [ ! -e $MARKER ]; do sleep 0.01; done; exit 4",
      2);
  spec.environment["MARKER"] = marker;
  spec.ranks = {3, 1};
  spec.world_size = 5;
  const auto result = launch_processes(spec, out, err);
  EXPECT_NE(out.str().find("[rank 3] rank 3 of 5, 0 of 2 here\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[rank 1] rank 1 of 5, 1 of 2 here\n"), std::string::npos) << out.str();
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.exit_code, 4);
  ASSERT_EQ(result.codes.size(), 2u);
  EXPECT_EQ(result.codes[1], 4);  // in the order the processes were started
}

// A rank that fails on its own input writes its error first; the others fail after it on
// losing it, and one of them may exit first. The report blames the first to write an
// error and quotes it.
TEST(ProcessLauncher, TheFirstRankToReportAnErrorIsBlamedWithItsMessage) {
  std::ostringstream out;
  std::ostringstream err;
  const std::string marker = hyperpipe::testing::temp_path("rank-0-reported");
  std::remove(marker.c_str());
  auto spec = shell(
      "if [ $RANK = 0 ]; then trap 'exit 2' TERM; echo 'error: --data: bad data' >&2; "
      "touch $MARKER; sleep 60 & wait; exit 2; fi; "
      "if [ $RANK = 2 ]; then while [ ! -e $MARKER ]; do sleep 0.01; done; "
      "echo 'error: lost rank 0' >&2; exit 1; fi; exec sleep 60",
      3);
  spec.environment["MARKER"] = marker;
  const auto result = launch_processes(spec, out, err);
  EXPECT_EQ(result.failed_rank, 2);  // the first to exit
  EXPECT_EQ(result.first_error_rank, 0);
  EXPECT_EQ(result.blamed_rank, 0);
  EXPECT_EQ(result.blamed_code, 2);
  EXPECT_EQ(result.blamed_message, "--data: bad data");
  EXPECT_EQ(failure_summary(result, 3), "rank 0 of 3 failed (exit code 2): --data: bad data");
}

// A rank killed outright writes nothing: the survivors' errors only say they lost it. Rank
// 1 dies only once rank 0 has its trap set (a file says so): killed sooner, rank 0 would
// be stopped before it could say anything, as happened on a loaded host.
TEST(ProcessLauncher, ARankKilledOutrightIsBlamedThoughOthersReportedErrors) {
  std::ostringstream out;
  std::ostringstream err;
  const std::string trap_set = hyperpipe::testing::temp_path("rank-0-trap-set");
  std::remove(trap_set.c_str());
  const auto result = launch_processes(
      shell(fmt::format("if [ $RANK = 1 ]; then while [ ! -e {0} ]; do sleep 0.01; done; "
                        "kill -9 $$; fi; "
                        "trap 'echo \"[error] lost rank 1\" >&2; exit 1' TERM; touch {0}; "
                        "sleep 60 & wait; exit 1",
                        trap_set),
            2),
      out, err);
  std::remove(trap_set.c_str());
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.first_error_rank, 0);
  EXPECT_EQ(result.first_error, "lost rank 1");
  EXPECT_EQ(result.blamed_rank, 1);
  EXPECT_EQ(result.blamed_code, 128 + SIGKILL);
  EXPECT_EQ(failure_summary(result, 2), "rank 1 of 2 failed (exit code 137)");
}

// A launcher's own single process (a pre-flight check): its lines as they are, and no
// "[launch]" lines of the launcher's.
TEST(ProcessLauncher, ABareProcessSpeaksForTheLauncher) {
  std::ostringstream out;
  std::ostringstream err;
  auto spec = shell("echo ready; echo 'error: --steps: a positive number' >&2; exit 2", 1);
  spec.bare = true;
  const auto result = launch_processes(spec, out, err);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(out.str(), "ready\n");
  EXPECT_EQ(err.str(), "error: --steps: a positive number\n");
}

// The others' exit codes say they were stopped (a `sleep 60` left alone exits 0); how long
// that takes is no test's business (bench/elastic_recovery.sh times detection).
TEST(ProcessLauncher, OneFailureStopsTheOthers) {
  std::ostringstream out;
  std::ostringstream err;
  const auto result =
      launch_processes(shell("if [ $RANK = 1 ]; then exit 3; fi; sleep 60", 3), out, err);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.codes[0], 128 + 15);  // SIGTERM
  EXPECT_EQ(result.codes[2], 128 + 15);
  EXPECT_NE(err.str().find("[launch] rank 1 exited with code 3"), std::string::npos) << err.str();
}

TEST(ProcessLauncher, ThoseIgnoringTermAreKilledAfterTheGrace) {
  std::ostringstream out;
  std::ostringstream err;
  // Rank 0 fails once rank 1 has had time to set its trap.
  auto spec = shell("trap '' TERM; if [ $RANK = 0 ]; then sleep 0.5; exit 5; fi; sleep 60", 2);
  spec.grace = std::chrono::milliseconds(300);
  const auto result = launch_processes(spec, out, err);
  EXPECT_EQ(result.exit_code, 5);
  EXPECT_EQ(result.codes[1], 128 + 9);  // SIGKILL
}

// Another host's side of a run failed: the launcher stops its own processes when asked
// to, and those that end on the stop have not failed.
TEST(ProcessLauncher, AStopAskedForEndsEveryWorkerWithoutBlamingThem) {
  std::ostringstream out;
  std::ostringstream err;
  auto spec = shell("sleep 60", 3);
  const auto asked_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  int asked = 0;
  spec.stop_when = [&] {
    ++asked;
    return std::chrono::steady_clock::now() > asked_at;
  };
  const auto result = launch_processes(spec, out, err);
  EXPECT_GT(asked, 1);
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.signal, 0);
  EXPECT_EQ(result.codes, (std::vector<int>{128 + SIGTERM, 128 + SIGTERM, 128 + SIGTERM}));
  EXPECT_EQ(result.failed_rank, -1);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(err.str().find("[launch] asked to stop: stopping the 3 workers"), std::string::npos)
      << err.str();
}

// Sends `signal_number` to this process (the launcher) while its workers run.
std::thread signal_soon(int signal_number) {
  return std::thread([signal_number] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(getpid(), signal_number);
  });
}

TEST(ProcessLauncher, ASignalToTheLauncherReachesEveryWorker) {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    std::ostringstream out;
    std::ostringstream err;
    // Each worker leads its own process group, so only the launcher can pass it on.
    const auto spec = shell(fmt::format("trap 'echo stopped; exit {}' INT TERM; "
                                        "while :; do sleep 0.05; done",
                                        128 + signal_number),
                            3);
    std::thread sender = signal_soon(signal_number);
    const auto result = launch_processes(spec, out, err);
    sender.join();
    EXPECT_EQ(result.signal, signal_number);
    EXPECT_EQ(result.exit_code, 128 + signal_number);  // 130 for Ctrl-C, as a shell says
    EXPECT_EQ(result.failed_rank, -1);
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_NE(out.str().find(fmt::format("[rank {}] stopped", rank)), std::string::npos)
          << out.str();
      EXPECT_EQ(result.codes[rank], 128 + signal_number);
    }
    EXPECT_NE(err.str().find("asking the 3 workers to stop"), std::string::npos) << err.str();
  }
}

TEST(ProcessLauncher, WorkersIgnoringTheForwardedSignalAreKilledAfterTheGrace) {
  std::ostringstream out;
  std::ostringstream err;
  auto spec = shell("trap '' INT; while :; do sleep 0.05; done", 2);
  spec.grace = std::chrono::milliseconds(300);
  std::thread sender = signal_soon(SIGINT);
  const auto result = launch_processes(spec, out, err);
  sender.join();
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_EQ(result.codes, (std::vector<int>{128 + SIGKILL, 128 + SIGKILL}));
}

TEST(ProcessLauncher, WorkersKnowTheirLauncher) {
  std::ostringstream out;
  std::ostringstream err;
  const auto result = launch_processes(shell("echo launcher=$HYPERPIPE_LAUNCHER_PID", 1), out, err);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(out.str().find(fmt::format("launcher={}\n", getpid())), std::string::npos) << out.str();
}

TEST(ProcessLauncher, EachRunHasASecretOfItsOwnSharedByItsRanks) {
  const auto token_lines = [](const LaunchSpec& spec) {
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(launch_processes(spec, out, err).exit_code, 0);
    return out.str();
  };
  const auto spec = shell("echo token=$HYPERPIPE_JOB_TOKEN", 2);
  const std::string first = token_lines(spec);
  const auto at = first.find("[rank 0] token=") + 15;
  const std::string token = first.substr(at, first.find('\n', at) - at);
  EXPECT_EQ(token.size(), 32u) << first;
  EXPECT_NE(first.find("[rank 1] token=" + token), std::string::npos) << first;
  EXPECT_EQ(token_lines(spec).find(token), std::string::npos);  // a new run, a new secret
  auto preset = spec;
  preset.environment[kJobTokenVariable] = "given-by-the-user-0123";
  EXPECT_NE(token_lines(preset).find("[rank 1] token=given-by-the-user-0123"), std::string::npos);
}

TEST(ProcessLauncher, APortInUseIsNotFree) {
  const int port = free_port();
  EXPECT_TRUE(port_is_free(port));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_FALSE(port_is_free(port));  // held on loopback: the store could not listen
  close(fd);
}

TEST(ProcessLauncher, AMissingProgramIsAnError) {
  std::ostringstream out;
  std::ostringstream err;
  LaunchSpec spec;
  spec.command = {"/nonexistent/hyperpipe-worker"};
  spec.processes = 2;
  EXPECT_THROW(launch_processes(spec, out, err), std::runtime_error);
}

}  // namespace
}  // namespace hyperpipe::launch
