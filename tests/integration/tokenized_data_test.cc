// Training on tokenized text: JSON lines read through a GPT-2-style BPE tokenizer in every
// process (train --tokenizer) must train bit for bit as the indexed dataset `hyperpipe
// tokenize` writes from the same file and tokenizer, and that dataset must decode back to
// the text; so must text read through a SentencePiece model in every rank, libsentencepiece
// loaded beside libtorch; a tokenizer whose ids the model's embedding cannot hold is refused
// before the run.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <nlohmann/json.hpp>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/tokenizers/byte_level_bpe.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// kTinyGpt with room for the tokenizer's ids.
constexpr const char* kWideVocabGpt =
    "name: test-gpt-320\nflavour: gpt\nhidden: 32\nlayers: 4\nheads: 2\nvocab: 320\nseq_len: 16\n"
    "tied_embeddings: true\ndropout: false\ndtype: fp32\n";

// A byte-level BPE of 256 bytes, some English merges and <|endoftext|>, as vocab.json and
// merges.txt in `dir`.
void write_tokenizer(const std::string& dir) {
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"t", "h"},        {"\u0120", "t"}, {"e", "r"},  {"i", "n"}, {"\u0120", "a"},
      {"\u0120t", "h"},  {"o", "n"},      {"r", "e"},  {"a", "n"}, {"\u0120", "s"},
      {"\u0120th", "e"}, {"e", "s"},      {"in", "g"}, {"e", "d"}, {"\u0120", "p"},
      {"\u0120", "c"},   {"a", "t"},      {"o", "r"},  {"e", "n"}, {"\u0120", "o"}};
  nlohmann::json vocab;
  for (int b = 0; b < 256; ++b)
    vocab[tokenizers::byte_character(static_cast<unsigned char>(b))] = b;
  int next = 256;
  std::ofstream merges_txt(dir + "/merges.txt");
  merges_txt << "#version: 0.2\n";
  for (const auto& [left, right] : merges) {
    vocab[left + right] = next++;
    merges_txt << left << ' ' << right << '\n';
  }
  vocab[tokenizers::kGpt2EndOfText] = next;
  std::ofstream(dir + "/vocab.json") << vocab.dump();
}

// The corpus's non-empty lines, each a document {"text": LINE}.
std::vector<std::string> write_json_lines(const std::string& path) {
  std::vector<std::string> documents;
  std::istringstream text(slurp(kCorpus));
  std::ofstream out(path);
  for (std::string line; std::getline(text, line);) {
    if (line.empty()) continue;
    documents.push_back(line);
    out << nlohmann::json{{"text", line}, {"source", "corpus.txt"}}.dump() << '\n';
  }
  return documents;
}

TEST(TokenizedData, JsonLinesThroughABpeTrainAsTheIndexedDatasetTokenizeWrites) {
  const std::string dir = prepare("tokenized-data", kWideVocabGpt, kThreeStages);
  std::filesystem::create_directories(dir + "/tokenizer");
  write_tokenizer(dir + "/tokenizer");
  const auto documents = write_json_lines(dir + "/corpus.jsonl");

  ASSERT_EQ(run_command(fmt::format("{} tokenize --input {}/corpus.jsonl --tokenizer {}/tokenizer "
                                    "--append-eod --output-prefix {}/corpus > {}/tokenize.txt 2>&1",
                                    kBinary, dir, dir, dir, dir)),
            0)
      << slurp(dir + "/tokenize.txt");
  // Read back: a document per line, each decoding to its text and ending in <|endoftext|>.
  const datasets::IndexedDataset data(dir + "/corpus");
  ASSERT_EQ(data.documents(), static_cast<int64_t>(documents.size()));
  EXPECT_EQ(data.dtype(), datasets::TokenDtype::kU16);
  const auto bpe = tokenizers::open_tokenizer(dir + "/tokenizer");
  const int64_t end = *bpe->end_of_document();
  int64_t merged = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    auto ids = data.tokens(static_cast<int64_t>(d));
    ASSERT_EQ(ids.back(), end);
    ids.pop_back();
    for (int64_t id : ids) merged += id >= 256;
    EXPECT_EQ(bpe->decode(ids), documents[d]);
  }
  EXPECT_GT(merged, data.total_tokens() / 10);  // the merges are used

  constexpr int kSteps = 4;
  const std::string in_process = launch_into(
      dir, fmt::format("--data {}/corpus.jsonl --tokenizer {}/tokenizer/vocab.json", dir, dir),
      kSteps, "in-process");
  const std::string indexed =
      launch_into(dir, fmt::format("--data {}/corpus", dir), kSteps, "indexed");
  const auto losses = metric_losses(indexed);
  ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(metric_losses(in_process), losses);  // bit for bit
  const auto weights = checkpoint_weights(indexed);
  for (const auto& [key, value] : checkpoint_weights(in_process)) {
    EXPECT_TRUE(torch::equal(weights.at(key), value)) << key;
  }
  // A resume that names another tokenizer is refused: its ids would mean other text.
  const int code = run_command(
      fmt::format("{} launch --plan {}/plan.json --data {}/corpus.jsonl --steps {} --resume "
                  "--checkpoint-dir {}/checkpoints {} > {}/resume.txt 2>&1",
                  kBinary, dir, dir, kSteps + 1, in_process, device_options(), dir));
  EXPECT_EQ(code, 2) << slurp(dir + "/resume.txt");
  EXPECT_NE(slurp(dir + "/resume.txt").find("tokenizer differs"), std::string::npos)
      << slurp(dir + "/resume.txt");
}

TEST(TokenizedData, TextThroughASentencePieceModelTrainsAsTheIndexedDatasetTokenizeWrites) {
  const std::string dir = prepare("tokenized-data-sentencepiece", kWideVocabGpt, kThreeStages);
  // A BPE model of the corpus by the library's own trainer, within the model's 320 ids.
  constexpr int kVocabulary = 300;
  const auto trained = sentencepiece::SentencePieceTrainer::Train(
      fmt::format("--input={} --model_prefix={}/corpus-sp --vocab_size={} --model_type=bpe "
                  "--minloglevel=2",
                  kCorpus, dir, kVocabulary));
  ASSERT_TRUE(trained.ok()) << trained.message();
  const std::string model = dir + "/corpus-sp.model";

  ASSERT_EQ(run_command(fmt::format("{} tokenize --input {} --tokenizer {} --append-eod "
                                    "--output-prefix {}/corpus > {}/tokenize.txt 2>&1",
                                    kBinary, kCorpus, model, dir, dir)),
            0)
      << slurp(dir + "/tokenize.txt");
  const datasets::IndexedDataset data(dir + "/corpus");
  ASSERT_EQ(data.documents(), 1);  // a text file is one document
  const auto ids = data.tokens(0);
  EXPECT_EQ(ids.back(), 2);  // the trainer's default end of sentence
  // Pieces of several characters, not one a byte (about two here).
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(kCorpus));
  EXPECT_LT(data.total_tokens(), bytes * 2 / 3);
  EXPECT_LT(*std::max_element(ids.begin(), ids.end()), kVocabulary);

  constexpr int kSteps = 4;
  const std::string in_process = launch_into(
      dir, fmt::format("--data {} --tokenizer {}", kCorpus, model), kSteps, "in-process");
  const std::string indexed =
      launch_into(dir, fmt::format("--data {}/corpus", dir), kSteps, "indexed");
  const auto losses = metric_losses(indexed);
  ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
  // Bit for bit: every rank read the text through the model (bytes would train otherwise).
  EXPECT_EQ(metric_losses(in_process), losses);
}

TEST(TokenizedData, ATokenizerLargerThanTheModelsVocabularyIsRefusedBeforeTheRun) {
  const std::string dir = prepare("tokenized-data-vocab", kTinyGpt, kThreeStages);
  std::filesystem::create_directories(dir + "/tokenizer");
  write_tokenizer(dir + "/tokenizer");
  const std::string log = dir + "/log.txt";
  const int code = run_command(fmt::format(
      "{} train --plan {}/plan.json --data {} --tokenizer {}/tokenizer --check > {} 2>&1", kBinary,
      dir, kCorpus, dir, log));
  EXPECT_EQ(code, 2) << slurp(log);
  EXPECT_NE(slurp(log).find("--tokenizer"), std::string::npos) << slurp(log);
  EXPECT_NE(slurp(log).find("tokenizer's 277 ids"), std::string::npos) << slurp(log);
  EXPECT_NE(slurp(log).find("test-gpt has 256"), std::string::npos) << slurp(log);
}

}  // namespace
}  // namespace hyperpipe::runtime
