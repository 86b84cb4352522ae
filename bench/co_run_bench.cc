// How much slower one process computes while another computes beside it on this host:
// the CPU-emulated cluster runs every device on the host's cores, and a profile is taken
// with the other cores idle. A dense float matrix product (compute-bound, as the blocks'
// products are) is timed in the thread's CPU time, alternately with the other cores idle
// and with one busy child process per other core running the same product; alternating
// round by round keeps the host's slow drift out of the ratio.
// Usage: build/bench/co_run_bench [rounds, default 30]
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

// 192² floats: three matrices fit in a core's L2, as a block's tiles do.
constexpr int kSide = 192;
constexpr int kProductsPerSample = 60;
constexpr int kDefaultRounds = 30;
// Time for the co-runners to start, and for the host to settle after they stop.
constexpr auto kSettle = std::chrono::milliseconds(20);

struct Matrices {
  std::vector<float> a, b, c;
  Matrices() : a(kSide * kSide), b(kSide * kSide), c(kSide * kSide) {
    for (int i = 0; i < kSide * kSide; ++i) {
      a[i] = static_cast<float>(i % 97) / 97.0f;
      b[i] = static_cast<float>(i % 89) / 89.0f;
    }
  }
  void multiply() {
    for (int i = 0; i < kSide; ++i) {
      for (int k = 0; k < kSide; ++k) {
        const float x = a[i * kSide + k];
        for (int j = 0; j < kSide; ++j) c[i * kSide + j] += x * b[k * kSide + j];
      }
    }
  }
};

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  constexpr double kNanosecond = 1e-9;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * kNanosecond;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : kDefaultRounds;
  const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
  Matrices m;
  std::array<double, 2> total{0, 0};  // [idle, busy]
  for (int round = 0; round < rounds; ++round) {
    for (int busy = 0; busy < 2; ++busy) {
      std::vector<pid_t> children;
      for (unsigned c = 0; busy && c + 1 < cores; ++c) {
        const pid_t child = fork();
        if (child == 0) {
          for (;;) m.multiply();
        }
        children.push_back(child);
      }
      std::this_thread::sleep_for(kSettle);
      const double start = thread_cpu_seconds();
      for (int i = 0; i < kProductsPerSample; ++i) m.multiply();
      total[busy] += thread_cpu_seconds() - start;
      for (const pid_t child : children) {
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
      }
      std::this_thread::sleep_for(kSettle);
    }
  }
  const double idle = total[0] / rounds;
  const double busy = total[1] / rounds;
  fmt::print(
      "{} products of {}²: {:.2f} ms CPU time with the other {} core(s) idle, {:.2f} ms "
      "with them computing: {:+.1f}%\n",
      kProductsPerSample, kSide, idle * 1e3, cores - 1, busy * 1e3, 100 * (busy / idle - 1));
  return 0;
}
