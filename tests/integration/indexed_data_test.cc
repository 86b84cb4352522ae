// Training on a Megatron-LM indexed dataset (--data PREFIX): the example corpus written as
// one (a sequence per line, a document per paragraph of lines) holds the same token
// stream as the text file, so a pipeline run on it must equal, bit for bit, the same run
// on the text; and ids the model's vocabulary lacks stop the run naming the file.
#include <gtest/gtest.h>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/launch/process_launcher.h"
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

// Under a launcher other than ours (torchrun, srun) no pre-flight scans the ids
// (preflight_test.cc): a window holding one is refused when a process draws it.
TEST(IndexedData, IdsBeyondTheModelsVocabularyAreRefusedWhenDrawnNamingTheFile) {
  const std::string dir = prepare("indexed-data-vocab", kTinyGpt, kTwoStages);
  std::vector<std::vector<int64_t>> sequences(64, std::vector<int64_t>(16, 7));
  for (auto& sequence : sequences) sequence[3] = 300;  // the test model has 256 ids
  datasets::write_indexed_dataset(dir + "/big-ids", sequences, datasets::TokenDtype::kU16, {0});
  const std::string options =
      fmt::format("--data {}/big-ids --steps 1 --timeout 10 {}", dir, device_options());
  const int port = launch::free_port();
  const pid_t rank0 = start_worker(dir + "/plan.json", 0, 2, port, options, dir + "/rank0.txt");
  const pid_t rank1 = start_worker(dir + "/plan.json", 1, 2, port, options, dir + "/rank1.txt");
  int status = 0;
  waitpid(rank0, &status, 0);
  const std::string first = slurp(dir + "/rank0.txt");
  EXPECT_EQ(WEXITSTATUS(status), 2) << first;  // rank 0 holds the embedding: it draws ids
  waitpid(rank1, &status, 0);
  EXPECT_NE(first.find("big-ids.bin: sequence"), std::string::npos) << first;
  EXPECT_NE(first.find("token ids from 0 to 255 (the model's vocabulary); found 300"),
            std::string::npos)
      << first;
}

}  // namespace
}  // namespace hyperpipe::runtime
