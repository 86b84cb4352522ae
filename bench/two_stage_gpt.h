// The small GPT and 2-stage 1F1B plan the runtime benches launch (runtime_bench,
// recompute_bench): 8 blocks of hidden 256, 8 micro-batches of 4 × 128 tokens, the
// embedding and 4 blocks on one device, 4 blocks and the head on another.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "hyperpipe/common/statistics.h"

namespace hyperpipe::bench {

inline const char* kModel =
    "name: bench-gpt\nflavour: gpt\nhidden: 256\nlayers: 8\nheads: 8\nvocab: 256\n"
    "seq_len: 128\ntied_embeddings: true\ndropout: false\ndtype: fp32\n";
inline constexpr int kCut = 5;  // embedding + 4 blocks | 4 blocks + head
inline constexpr int64_t kMicroBatch = 4;
inline constexpr int kMicroBatches = 8;
inline constexpr int kWarmupSteps = 2;

// Writes model.yaml and plan.json (with `recompute` for every stage) into `dir`.
inline void write_two_stage_plan(const std::filesystem::path& dir,
                                 const std::string& recompute = "none") {
  std::ofstream(dir / "model.yaml") << kModel;
  std::ofstream(dir / "plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "model.yaml", "cluster": "a100x8",
          "recompute": "{}", "micro_batch_size": {}, "micro_batches": {}, "schedule": "1f1b",
          "stages": [{{"layers": [0, {}], "devices": [0]}}, {{"layers": [{}, 10], "devices": [1]}}]}})",
      recompute, kMicroBatch, kMicroBatches, kCut, kCut);
}

// `hyperpipe launch` of dir's plan for `steps` (with `options` for train), metrics.jsonl
// and timeline.json (and their predictions) beside it; throws where the run fails.
inline void launch_two_stage_plan(const std::filesystem::path& dir, int steps,
                                  const std::string& options = "") {
  const std::string command = fmt::format(
      "{} launch --plan {}/plan.json --data {}/data/corpus.txt --steps {} --metrics "
      "{}/metrics.jsonl --timeline {}/timeline.json {} > {}/log.txt 2>&1",
      HYPERPIPE_BINARY, dir.string(), HYPERPIPE_EXAMPLES, steps, dir.string(), dir.string(),
      options, dir.string());
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error("the run failed; see " + (dir / "log.txt").string());
  }
}

// Per track of a timeline file: the largest memory sample over the first (the activations
// in flight at their peak).
inline std::vector<double> peak_activations(const std::filesystem::path& path) {
  std::ifstream file(path);
  const auto timeline = nlohmann::json::parse(file);
  std::vector<double> peaks;
  for (const auto& track : timeline["tracks"]) {
    const auto& samples = track["memory"];
    double peak = 0;
    for (const auto& sample : samples) peak = std::max(peak, sample[1].get<double>());
    peaks.push_back(samples.empty() ? 0 : peak - samples[0][1].get<double>());
  }
  return peaks;
}

// The median step of the run's metrics after the warm-up.
inline double median_step_seconds(const std::filesystem::path& dir) {
  std::vector<double> step_seconds;
  std::ifstream metrics(dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry["step"].get<int>() >= kWarmupSteps) step_seconds.push_back(entry["seconds"]);
  }
  return median(step_seconds);
}

}  // namespace hyperpipe::bench
