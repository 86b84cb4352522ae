// What each recomputation mode costs and saves, measured against predicted: one 2-stage
// 1F1B plan of a small GPT (8 blocks, hidden 256) run through `hyperpipe launch` with
// `recompute` none, selective and full. Per mode: the median step and its throughput
// relative to none, beside the simulator's ratio for the same plan; each stage's
// activations in flight at their peak, measured by the allocator and predicted by the cost
// model. The simulator's times are the cost model's estimates for the plan's cluster, so
// only their ratios compare with this host's.
// Usage: recompute_bench [steps] (default 8; the first 2 are warm-up).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "two_stage_gpt.h"

namespace {

namespace fs = std::filesystem;

using namespace hyperpipe::bench;

struct ModeResult {
  double step_seconds = 0;
  double predicted_seconds = 0;
  std::vector<double> measured_activations, predicted_activations;  // per stage
};

ModeResult run(const fs::path& dir, const std::string& mode, int steps) {
  write_two_stage_plan(dir, mode);
  launch_two_stage_plan(dir, steps);
  ModeResult result;
  result.step_seconds = median_step_seconds(dir);
  std::ifstream prediction(dir / "metrics.jsonl.prediction.json");
  result.predicted_seconds = nlohmann::json::parse(prediction)["predicted_iteration_s"];
  result.measured_activations = peak_activations(dir / "timeline.json");
  result.predicted_activations = peak_activations(dir / "timeline.predicted.json");
  return result;
}

std::string mib(double bytes) {
  return fmt::format("{:.1f}", bytes / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 8;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("hyperpipe-recompute-bench-{}", getpid());
  fs::create_directories(dir);
  std::vector<std::string> modes{"none", "selective", "full"};
  std::vector<ModeResult> results;
  try {
    for (const auto& mode : modes) results.push_back(run(dir, mode, steps));
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
  std::cout << fmt::format(
      "2-stage 1F1B, {} micro-batches of {} × 128 tokens, GPT 8 × 256 (median of {} steps)\n"
      "{:<10} {:>9} {:>22} {:>22} {:>28}\n",
      kMicroBatches, kMicroBatch, steps - kWarmupSteps, "recompute", "step ms",
      "throughput vs none", "predicted vs none", "activations MiB, measured/predicted");
  for (size_t m = 0; m < modes.size(); ++m) {
    const auto& r = results[m];
    std::string activations;
    for (size_t s = 0; s < r.measured_activations.size(); ++s) {
      activations += fmt::format("{}{}/{}", s ? ", " : "", mib(r.measured_activations[s]),
                                 mib(r.predicted_activations[s]));
    }
    std::cout << fmt::format("{:<10} {:>9.1f} {:>22.3f} {:>22.3f} {:>28}\n", modes[m],
                             1e3 * r.step_seconds, results[0].step_seconds / r.step_seconds,
                             results[0].predicted_seconds / r.predicted_seconds, activations);
  }
  fs::remove_all(dir);
  return 0;
}
