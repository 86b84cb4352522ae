#include "hyperpipe/common/process_start.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace hyperpipe {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The kernel counts a process's start in clock ticks and its uptime in hundredths (10 ms
// each at USER_HZ 100): the start may read up to a tick of each off.
constexpr double kTolerance = 0.021;

TEST(ProcessStart, AChildStartsBetweenTheForkAndItsFirstLook) {
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  const double before_fork = now();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto started = process_start_time();
    const double looked = now();
    const double both[2] = {started.value_or(-1), looked};
    const ssize_t written = ::write(pipe_ends[1], both, sizeof both);
    _exit(written == sizeof both ? 0 : 1);
  }
  double both[2] = {};
  ASSERT_EQ(::read(pipe_ends[0], both, sizeof both), static_cast<ssize_t>(sizeof both));
  int status = 0;
  waitpid(child, &status, 0);
  close(pipe_ends[0]);
  close(pipe_ends[1]);
  const double started = both[0];
  const double looked = both[1];
  ASSERT_GT(started, 0) << "no start time from /proc";
  EXPECT_GE(started, before_fork - kTolerance);
  EXPECT_LE(started, looked + kTolerance);
}

TEST(ProcessStart, ThisProcessStartedBeforeNow) {
  const auto started = process_start_time();
  ASSERT_TRUE(started);
  EXPECT_LE(*started, now() + kTolerance);
}

}  // namespace
}  // namespace hyperpipe
