// What mixed precision costs and saves on this host: the runtime bench's 2-stage 1F1B plan
// of a small GPT (two_stage_gpt.h) run through `hyperpipe launch` in fp32 and in bf16
// (fp32 master weights, main grads and AdamW state). Per dtype: the median step and its
// throughput relative to fp32, each stage's weights + gradients + optimizer state and its
// activations in flight at their peak (measured by the allocator, predicted by the cost
// model), and the loss after the last step. Where the CPU multiplies bf16 itself
// (AVX512-BF16, AMX) bf16 is faster; one without converts every element and is slower.
// Usage: precision_bench [steps] (default 8; the first 2 are warm-up).
#include <fmt/format.h>
#include <unistd.h>

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

struct DtypeResult {
  double step_seconds = 0;
  double last_loss = 0;
  std::vector<double> static_bytes;  // per stage, measured (the cost model's to the byte)
  std::vector<double> predicted_static;
  std::vector<double> measured_activations, predicted_activations;  // per stage
};

std::vector<double> static_bytes(const fs::path& path) {
  std::ifstream file(path);
  const auto timeline = nlohmann::json::parse(file);
  std::vector<double> bytes;
  for (const auto& track : timeline["tracks"]) {
    bytes.push_back(track.value("static_bytes", 0.0));
  }
  return bytes;
}

DtypeResult run(const fs::path& dir, const std::string& dtype, int steps) {
  write_two_stage_plan(dir);
  launch_two_stage_plan(dir, steps, "--dtype " + dtype);
  DtypeResult result;
  result.step_seconds = median_step_seconds(dir);
  std::ifstream metrics(dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    result.last_loss = nlohmann::json::parse(line)["loss"];
  }
  result.static_bytes = static_bytes(dir / "timeline.json");
  result.predicted_static = static_bytes(dir / "timeline.predicted.json");
  result.measured_activations = peak_activations(dir / "timeline.json");
  result.predicted_activations = peak_activations(dir / "timeline.predicted.json");
  return result;
}

std::string mib(double bytes) {
  return fmt::format("{:.1f}", bytes / (1 << 20));
}

std::string pairs(const std::vector<double>& measured, const std::vector<double>& predicted) {
  std::string text;
  for (size_t s = 0; s < measured.size(); ++s) {
    text += fmt::format("{}{}/{}", s ? ", " : "", mib(measured[s]), mib(predicted[s]));
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 8;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("hyperpipe-precision-bench-{}", getpid());
  fs::create_directories(dir);
  const std::vector<std::string> dtypes{"fp32", "bf16"};
  std::vector<DtypeResult> results;
  try {
    for (const auto& dtype : dtypes) results.push_back(run(dir, dtype, steps));
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
  std::cout << fmt::format(
      "2-stage 1F1B, {} micro-batches of {} × 128 tokens, GPT 8 × 256 (median of {} steps)\n"
      "{:<6} {:>9} {:>12} {:>10} {:>34} {:>30}\n",
      kMicroBatches, kMicroBatch, steps - kWarmupSteps, "dtype", "step ms", "vs fp32", "last loss",
      "static MiB, measured/predicted", "activations MiB, meas./pred.");
  for (size_t d = 0; d < dtypes.size(); ++d) {
    const auto& r = results[d];
    std::cout << fmt::format("{:<6} {:>9.1f} {:>12.3f} {:>10.4f} {:>34} {:>30}\n", dtypes[d],
                             1e3 * r.step_seconds, results[0].step_seconds / r.step_seconds,
                             r.last_loss, pairs(r.static_bytes, r.predicted_static),
                             pairs(r.measured_activations, r.predicted_activations));
  }
  fs::remove_all(dir);
  return 0;
}
