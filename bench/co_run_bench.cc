// How much the cores of this host slow each other, for the work the CPU-emulated cluster
// does: every device there is a process of this host, and `hyperpipe profile` times each
// op with the other cores idle. A chain of tiny-gpt's blocks (the profiler's) is timed in
// this thread's CPU time (stand_in_clock.h, one intra-op thread), round by round with the
// other cores idle and with a thread per other core running its own copy of the chain;
// alternating keeps the host's drift out of the ratio. A hand-written vectorised product
// is timed the same way for comparison.
// Usage: build/bench/co_run_bench [rounds, default 12]   (from the repository root)
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/profiler.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/runtime/stand_in_clock.h"
#include "vector_product.h"

namespace hyperpipe::runtime {
namespace {

constexpr int kDefaultRounds = 12;
constexpr double kSampleSeconds = 0.05;  // long enough for scheduler slices to average out
constexpr auto kSettle = std::chrono::milliseconds(20);
constexpr int64_t kMicroBatch = 4;

using Work = std::function<void()>;

// The share by which `make()`'s work slows in this thread's CPU time while `co_runners`
// threads run their own copies.
double co_run_slowdown(const std::function<Work()>& make, int co_runners, int rounds) {
  Work timed = make();
  timed();
  const double start = work_seconds();
  timed();
  const int runs = std::max(1, static_cast<int>(kSampleSeconds / (work_seconds() - start)));
  std::atomic<bool> busy{false}, done{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < co_runners; ++c) {
    threads.emplace_back([&] {
      Work work = make();
      ++ready;
      while (!done) {
        if (busy) {
          work();
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
    });
  }
  while (ready < co_runners) std::this_thread::sleep_for(kSettle);
  double alone = 0, beside = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const bool others : {false, true}) {
      busy = others;
      std::this_thread::sleep_for(kSettle);
      const double before = work_seconds();
      for (int r = 0; r < runs; ++r) timed();
      (others ? beside : alone) += work_seconds() - before;
    }
  }
  done = true;
  for (auto& thread : threads) thread.join();
  return beside / alone - 1.0;
}

Work block_chain(const model::Model& model) {
  auto chain = std::make_shared<StageModule>(
      model, 1, 1 + std::min<int>(kProfiledBlocks, model.config().layers), 0);
  auto input = torch::randn({kMicroBatch, model.config().seq_len, model.config().hidden});
  return [chain, input] {
    torch::NoGradGuard no_grad;
    chain->forward(input);
  };
}

}  // namespace
}  // namespace hyperpipe::runtime

int main(int argc, char** argv) {
  using namespace hyperpipe;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : runtime::kDefaultRounds;
  const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  torch::set_num_threads(1);  // as each training process
  const auto model = model::load_model("examples/models/tiny-gpt.yaml");
  const double blocks =
      runtime::co_run_slowdown([&] { return runtime::block_chain(model); }, cores - 1, rounds);
  const double product = runtime::co_run_slowdown(bench::vector_product, cores - 1, rounds);
  fmt::print(
      "CPU time with the other {} core(s) computing, against idle: tiny-gpt block chain "
      "{:+.1f}%, hand-vectorised {}² product {:+.1f}%\n",
      cores - 1, 100 * blocks, bench::kSide, 100 * product);
  return 0;
}
