// `train --init-from DIR` refuses, before its first step, weights it would not compute as
// their config says. That it loads what it accepts into any split as transformers computes
// it is held against transformers itself (tests/oracles/transformers_oracle.py).
#include <gtest/gtest.h>

#include "hf_test_models.h"
#include "hyperpipe/weights/safetensors.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
namespace fs = std::filesystem;
using namespace hf_test_models;

// Weights that would not compute what their config says, or that the config does not
// describe, stop the run before its first step with exit 2, naming the file and the field
// or tensor.
TEST(HfWeightsRefused, SettingsTheRuntimeDoesNotComputeAndShapesTheConfigDoesNotHave) {
  const std::string dir = hyperpipe::testing::temp_path("hf-weights-refused");
  fs::remove_all(dir);
  std::ofstream(dir + "-plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/hf", "cluster": "a100x8",
          "micro_batch_size": 2, "micro_batches": 1, "schedule": "1f1b",
          "stages": [{{"layers": [0, 4], "devices": [0]}}]}})",
      dir);
  const auto refusal = [&](const std::string& config, const Tensors& tensors) {
    fs::remove_all(dir);
    write_checkpoint(dir + "/hf", config, tensors, 1);
    const std::string log = dir + "-log.txt";
    const int code =
        run_command(fmt::format("{} launch --plan {}-plan.json --data {} --steps 1 "
                                "--init-from {}/hf {} > {} 2>&1",
                                kBinary, dir, kCorpus, dir, device_options(), log));
    EXPECT_EQ(code, 2) << slurp(log);
    return slurp(log);
  };
  std::string config = kLlamaConfig;
  config.replace(config.find("\"rope_scaling\": null"), 20,
                 R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})");
  auto log = refusal(config, llama_tensors());
  EXPECT_NE(log.find("config.json: rope_scaling: null (no scaled rotary positions) (all "
                     "HyperPipe's runtime computes so far"),
            std::string::npos)
      << log;

  // A header whose shape is not the config's: the second block's up projection cut short.
  Tensors tensors = llama_tensors();
  for (auto& [key, value] : tensors) {
    if (key == "model.layers.1.mlp.up_proj.weight") value = value.slice(0, 0, kLlamaFfn - 8);
  }
  log = refusal(kLlamaConfig, tensors);
  EXPECT_NE(log.find("model.safetensors: model.layers.1.mlp.up_proj.weight: shape [48, 32], as "
                     "config.json's model needs; got [40, 32]"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("joined"), std::string::npos) << "refused only after the processes met";

  // --logits into a folder holding an earlier run's: this run's files could not be told
  // from those.
  fs::remove_all(dir);
  write_checkpoint(dir + "/hf", kLlamaConfig, llama_tensors(), 1);
  fs::create_directories(dir + "/logits");
  std::ofstream(dir + "/logits/logits-rank3.safetensors") << "an earlier run's";
  const std::string logits_log = dir + "-logits-log.txt";
  EXPECT_EQ(run_command(fmt::format("{} launch --plan {}-plan.json --data {} --steps 1 "
                                    "--init-from {}/hf --logits {}/logits {} > {} 2>&1",
                                    kBinary, dir, kCorpus, dir, dir, device_options(), logits_log)),
            2);
  EXPECT_NE(slurp(logits_log)
                .find("a folder without an earlier run's logits files; it holds "
                      "logits-rank3.safetensors"),
            std::string::npos)
      << slurp(logits_log);
}

}  // namespace
}  // namespace hyperpipe::runtime
