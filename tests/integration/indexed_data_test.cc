// Training on a Megatron-LM indexed dataset (--data PREFIX): the example corpus written as
// one (a sequence per line, a document per paragraph of lines) holds the same token
// stream as the text file, so a pipeline run on it must equal, bit for bit, the same run
// on the text; and ids the model's vocabulary lacks stop the run naming the file.
#include <gtest/gtest.h>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// The corpus's bytes as uint16 ids, a sequence per line (its newline included) and a
// document every `lines_per_document` lines.
void write_corpus_as_indexed_dataset(const std::string& prefix, int lines_per_document) {
  const std::string text = slurp(kCorpus);
  std::vector<std::vector<int64_t>> sequences{{}};
  for (const char c : text) {
    sequences.back().push_back(static_cast<unsigned char>(c));
    if (c == '\n') sequences.emplace_back();
  }
  std::vector<int64_t> starts;
  for (size_t s = 0; s < sequences.size(); s += lines_per_document) {
    starts.push_back(static_cast<int64_t>(s));
  }
  datasets::write_indexed_dataset(prefix, sequences, datasets::TokenDtype::kU16, starts);
  const datasets::IndexedDataset back(prefix);
  ASSERT_EQ(back.total_tokens(), static_cast<int64_t>(text.size()));
}

TEST(IndexedData, APipelineRunOnIndexedTokensEqualsTheRunOnTheSameText) {
  const std::string dir = prepare("indexed-data", kTinyGpt, kThreeStages);
  write_corpus_as_indexed_dataset(dir + "/corpus", 5);
  constexpr int kSteps = 4;
  const auto run = [&](const std::string& data, const std::string& name) {
    return launch_into(dir, "--data " + data, kSteps, name);
  };
  const std::string text = run(kCorpus, "text");
  const std::string indexed = run(dir + "/corpus", "indexed");
  const auto losses = metric_losses(indexed);
  ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(losses, metric_losses(text));  // bit for bit
  const auto weights = checkpoint_weights(indexed);
  const auto text_weights = checkpoint_weights(text);
  ASSERT_EQ(weights.size(), text_weights.size());
  for (const auto& [key, value] : text_weights) {
    EXPECT_TRUE(torch::equal(weights.at(key), value)) << key;
  }
  // Either file of the pair names it too.
  EXPECT_EQ(metric_losses(run(dir + "/corpus.idx", "by-index")), losses);
}

TEST(IndexedData, IdsBeyondTheModelsVocabularyAreRefusedNamingTheFile) {
  const std::string dir = prepare("indexed-data-vocab", kTinyGpt, kThreeStages);
  std::vector<std::vector<int64_t>> sequences(64, std::vector<int64_t>(16, 7));
  for (auto& sequence : sequences) sequence[3] = 300;  // the test model has 256 ids
  datasets::write_indexed_dataset(dir + "/big-ids", sequences, datasets::TokenDtype::kU16, {0});
  const std::string log = dir + "/log.txt";
  const int code =
      run_command(fmt::format("{} launch --plan {}/plan.json --data {}/big-ids "
                              "--steps 1 {} > {} 2>&1",
                              kBinary, dir, dir, device_options(), log));
  // Found when the window is drawn (a check of every id before the run would read the whole
  // token file in every process): the rank that draws it exits 2, its peers on losing it.
  EXPECT_NE(code, 0) << slurp(log);
  EXPECT_NE(slurp(log).find("big-ids.bin: sequence"), std::string::npos) << slurp(log);
  EXPECT_NE(slurp(log).find("token ids from 0 to 255 (the model's vocabulary); found 300"),
            std::string::npos)
      << slurp(log);
}

}  // namespace
}  // namespace hyperpipe::runtime
