// `hyperpipe export-checkpoint`: a Hugging Face checkpoint the test writes (GPT-2: Conv1D
// weights, tied head; LLaMA: grouped-query attention, rotary rows, untied head, shards) is
// trained from for one step at a learning rate far below fp32's resolution, so the
// checkpoint's weights are the file's; its export must then hold every tensor of the
// original file byte for byte under its Hugging Face name (the export's layouts are the
// reader's turned around, checked against the file the test wrote, not against the
// reader), a config.json that reads back as the same model, and train from its files to
// the same first loss bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "hf_test_models.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/weights/hf_checkpoint.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
using namespace hf_test_models;
namespace fs = std::filesystem;

// Far below half an fp32 ulp of any weight (the weights are about 0.3): an AdamW step of
// this size, and its decay, leave every weight as it was.
constexpr double kFrozenLearningRate = 1e-30;

struct Exporting {
  const char* name;
  bool llama;
  const char* plan_body;
  const char* max_shard_size;
  LlamaVariant variant = {};
};

class HfExport : public ::testing::TestWithParam<Exporting> {};

// The safetensors files of an exported folder, by tensor name.
std::map<std::string, std::string> weight_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  if (fs::exists(dir + "/model.safetensors.index.json")) {
    const auto index = nlohmann::json::parse(slurp(dir + "/model.safetensors.index.json"));
    for (const auto& [name, file] : index.at("weight_map").items()) {
      files[name] = dir + "/" + file.get<std::string>();
    }
  } else {
    const weights::SafetensorsFile file(dir + "/model.safetensors");
    for (const auto& entry : file.tensors()) {
      files[entry.name] = dir + "/model.safetensors";
    }
  }
  return files;
}

TEST_P(HfExport, ATrainedCheckpointExportsToTheTensorsItWasLoadedFrom) {
  const auto& c = GetParam();
  const std::string dir = hyperpipe::testing::temp_path(std::string("hf-export-") + c.name);
  const Tensors tensors = write_model_and_plan(dir, c.llama, c.plan_body, c.variant);
  const auto train = [&](const std::string& init_from, const std::string& name) {
    const std::string log = dir + "/" + name + ".txt";
    EXPECT_EQ(run_command(fmt::format(
                  "{} launch --plan {}/plan.json --data {} --steps 1 --lr {} --init-from {} "
                  "--checkpoint-dir {}/{} --metrics {}/{}/metrics.jsonl {} > {} 2>&1",
                  kBinary, dir, kCorpus, kFrozenLearningRate, init_from, dir, name, dir, name,
                  device_options(), log)),
              0)
        << slurp(log);
    return metric_losses(dir + "/" + name);
  };
  const auto first_losses = train(dir + "/hf", "trained");

  const std::string summary_path = dir + "/summary.json";
  ASSERT_EQ(run_command(fmt::format("{} export-checkpoint --checkpoint {}/trained --out {}/out "
                                    "--max-shard-size {} --format json > {} 2>&1",
                                    kBinary, dir, dir, c.max_shard_size, summary_path)),
            0)
      << slurp(summary_path);
  const auto summary = nlohmann::json::parse(slurp(summary_path));
  EXPECT_EQ(summary.at("tensors").get<size_t>(), tensors.size());

  // Every tensor of the original file, byte for byte, and nothing else.
  const auto files = weight_files(dir + "/out");
  EXPECT_EQ(files.size(), tensors.size());
  std::set<std::string> shards;
  for (const auto& [name, value] : tensors) {
    ASSERT_TRUE(files.count(name)) << name;
    shards.insert(files.at(name));
    const weights::SafetensorsFile file(files.at(name));
    EXPECT_EQ(file.metadata().at("format"), "pt");  // what transformers' loader requires
    const auto* entry = file.find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->dtype, weights::TensorDtype::kF32);
    EXPECT_EQ(entry->shape, value.sizes().vec()) << name;
    const auto bytes = file.bytes(*entry);
    ASSERT_EQ(bytes.size(), static_cast<size_t>(value.nbytes())) << name;
    EXPECT_EQ(std::memcmp(bytes.data(), value.data_ptr(), bytes.size()), 0) << name;
  }
  EXPECT_EQ(shards.size() > 1, c.llama) << "the LLaMA export is split by --max-shard-size";

  // The config reads back as the model trained.
  const auto original = model::load_model(dir + "/hf").config();
  const auto exported = model::load_model(dir + "/out").config();
  EXPECT_EQ(weights::hf_model_mismatch(original, exported), std::nullopt);
  EXPECT_EQ(exported.name, original.name);
  EXPECT_EQ(exported.dropout, original.dropout);

  // Trained from, the export computes as the original did.
  EXPECT_EQ(train(dir + "/out", "from-export"), first_losses);  // bit for bit
}

// A folder holding an export is replaced only when asked; a model other than the one
// trained is refused.
TEST(HfExportRefused, AnEarlierExportAndAnotherModel) {
  const std::string dir = hyperpipe::testing::temp_path("hf-export-refused");
  fs::remove_all(dir);
  write_checkpoint(dir + "/hf", kGpt2Config, gpt2_tensors(), 1);
  std::ofstream(dir + "/plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/hf", "cluster": "a100x8",
          "micro_batch_size": 2, "micro_batches": 1, "schedule": "1f1b",
          "stages": [{{"layers": [0, 4], "devices": [0]}}]}})",
      dir);
  ASSERT_EQ(run_command(fmt::format("{} launch --plan {}/plan.json --data {} --steps 1 "
                                    "--init-from {}/hf --checkpoint-dir {}/ck {} > {}/log 2>&1",
                                    kBinary, dir, kCorpus, dir, dir, device_options(), dir)),
            0)
      << slurp(dir + "/log");
  const auto export_to = [&](const std::string& options) {
    return run_command(fmt::format("{} export-checkpoint --checkpoint {}/ck {} > {}/log 2>&1",
                                   kBinary, dir, options, dir));
  };
  EXPECT_EQ(export_to(fmt::format("--out {}/hf", dir)), 2);
  EXPECT_NE(slurp(dir + "/log").find("give --overwrite to replace it"), std::string::npos)
      << slurp(dir + "/log");
  EXPECT_EQ(export_to(fmt::format("--out {}/other --model gpt2", dir)), 2);
  EXPECT_NE(slurp(dir + "/log").find("the model the checkpoint was trained as"), std::string::npos)
      << slurp(dir + "/log");
  EXPECT_FALSE(fs::exists(dir + "/other/config.json"));
  EXPECT_EQ(export_to(fmt::format("--out {}/hf --overwrite", dir)), 0) << slurp(dir + "/log");
}

INSTANTIATE_TEST_SUITE_P(
    Splits, HfExport,
    ::testing::Values(Exporting{"gpt2-two-stages-tp-two", false,
                                R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                              {"layers": [2, 4], "devices": [2, 3], "tp": 2}])",
                                "5GB"},
                      Exporting{"llama-three-stages-tp-two", true,
                                R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0]},
                              {"layers": [2, 3], "devices": [1, 2], "tp": 2},
                              {"layers": [3, 4], "devices": [3]}])",
                                "40KB"},
                      Exporting{"qwen2-one-stage-tp-two", true,
                                R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 4], "devices": [0, 1], "tp": 2}])",
                                "40KB", kQwen2}),
    hyperpipe::testing::NameOfCase());

}  // namespace
}  // namespace hyperpipe::runtime
