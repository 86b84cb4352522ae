// How much this host's speed moves by itself, with nothing else of ours running: one
// thread times a fixed product (vector_product.h) back to back for a while, and the
// medians of its times in windows of one and of five seconds are compared. The
// accuracy bench (bench/accuracy.sh) predicts each run from a profile taken 5-20 s
// before it, so the spread of the five-second windows is the floor under its error that
// no cost model can remove. CPU time is reported beside wall time: where the two agree,
// the core itself ran slower (a co-tenant of the physical core), not this thread waiting.
// Usage: build/bench/host_drift_bench [seconds, default 30]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "hyperpipe/common/statistics.h"
#include "vector_product.h"

namespace hyperpipe::bench {
namespace {

constexpr double kDefaultSeconds = 30;
constexpr double kShortWindow = 1.0;  // seconds
constexpr double kLongWindow = 5.0;   // about a profile-then-run gap of the accuracy bench

double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  constexpr double kNanosecond = 1e-9;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * kNanosecond;
}

struct Sample {
  double at = 0;    // wall seconds from the start
  double wall = 0;  // seconds the product took
  double cpu = 0;
};

// The median product time of each whole window of `window` seconds.
std::vector<double> window_medians(const std::vector<Sample>& samples, double window) {
  std::vector<double> medians, current;
  double end = window;
  for (const auto& s : samples) {
    if (s.at >= end) {
      if (!current.empty()) medians.push_back(median(current));
      current.clear();
      end += window;
    }
    current.push_back(s.cpu);
  }
  return medians;  // the last, partial window left out
}

void report(const std::vector<Sample>& samples, double window) {
  const auto medians = window_medians(samples, window);
  if (medians.size() < 2) return;
  const auto [fastest, slowest] = std::minmax_element(medians.begin(), medians.end());
  std::vector<double> steps;  // between neighbouring windows
  for (size_t i = 1; i < medians.size(); ++i) {
    steps.push_back(std::abs(medians[i] / medians[i - 1] - 1));
  }
  fmt::print(
      "{:.0f}-s windows ({}): slowest {:.0f}% above fastest; neighbouring windows differ by "
      "{:.1f}% (median), {:.1f}% (largest)\n",
      window, medians.size(), 100 * (*slowest / *fastest - 1), 100 * median(steps),
      100 * *std::max_element(steps.begin(), steps.end()));
}

}  // namespace
}  // namespace hyperpipe::bench

int main(int argc, char** argv) {
  using namespace hyperpipe::bench;
  const double seconds = argc > 1 ? std::atof(argv[1]) : kDefaultSeconds;
  if (!(seconds >= 2 * kLongWindow)) {
    fmt::print(stderr, "host_drift_bench: seconds must be at least {:.0f}\n", 2 * kLongWindow);
    return 2;
  }
  const auto product = vector_product();
  product();  // warm
  std::vector<Sample> samples;
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double wall_total = 0, cpu_total = 0;
  while (since_start() < seconds) {
    const double at = since_start();
    const double cpu = thread_seconds();
    product();
    samples.push_back({at, since_start() - at, thread_seconds() - cpu});
    wall_total += samples.back().wall;
    cpu_total += samples.back().cpu;
  }
  std::vector<double> cpu;
  for (const auto& s : samples) cpu.push_back(s.cpu);
  fmt::print("{} products of {}² in {:.0f} s: median {:.2f} ms of CPU time; wall / CPU {:.3f}\n",
             samples.size(), kSide, seconds, 1e3 * hyperpipe::median(cpu), wall_total / cpu_total);
  report(samples, kShortWindow);
  report(samples, kLongWindow);
  return 0;
}
