#include "hyperpipe/tokenizers/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hyperpipe/common/error.h"
#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/tokenizers/tokenized_documents.h"
#include "test_files.h"

namespace hyperpipe::tokenizers {
namespace {

using hyperpipe::testing::error_message;

// A small model trained by the library's own trainer on text the test writes.
class TrainedSentencePiece : public ::testing::Test {
 protected:
  // 256 byte pieces (byte fallback), 3 meta pieces, the characters, and some merges.
  static constexpr int kVocabulary = 400;

  static void SetUpTestSuite() {
    enable_sentencepiece_models();
    dir_ = new std::string(hyperpipe::testing::temp_path("sentencepiece"));
    std::filesystem::create_directories(*dir_);
    std::ofstream text(*dir_ + "/train.txt");
    const char* words[] = {"pipeline", "stage", "tensor", "gradient", "device", "layer",
                           "the",      "of",    "a",      "mixed",    "cluster"};
    for (int line = 0; line < 400; ++line) {
      for (int w = 0; w < 8; ++w) text << words[(line * 7 + w * 3) % 11] << ' ';
      text << line << "\n";
    }
    text.close();
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + *dir_ + "/train.txt --model_prefix=" + *dir_ + "/tiny --vocab_size=" +
        std::to_string(kVocabulary) + " --model_type=bpe --byte_fallback=true --minloglevel=2");
    ASSERT_TRUE(status.ok()) << status.message();
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  static std::string* dir_;
};

std::string* TrainedSentencePiece::dir_ = nullptr;

TEST_F(TrainedSentencePiece, RoundTripsTextAndReportsItsVocabulary) {
  const auto tokenizer = open_tokenizer(*dir_ + "/tiny.model");
  EXPECT_EQ(tokenizer->vocab_size(), kVocabulary);
  EXPECT_NE(tokenizer->identity().find("SentencePiece, 400 tokens, CRC-32"), std::string::npos);
  ASSERT_TRUE(tokenizer->end_of_document().has_value());
  EXPECT_EQ(*tokenizer->end_of_document(), 2);  // the trainer's default eos_id
  const std::string text = "the pipeline of a mixed cluster";
  const auto ids = tokenizer->encode(text);
  // Trained on these words, it needs far fewer tokens than bytes.
  EXPECT_LT(ids.size(), text.size() / 2);
  for (int64_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, kVocabulary);
  }
  EXPECT_EQ(tokenizer->decode(ids), text);
  // Byte fallback: text it never saw still round-trips.
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("Ünïcode ☃")), "Ünïcode ☃");
}

TEST_F(TrainedSentencePiece, IsFoundInADirectoryAsTokenizerModel) {
  std::filesystem::copy_file(*dir_ + "/tiny.model", *dir_ + "/tokenizer.model",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_NE(open_tokenizer(*dir_)->describe().find("SentencePiece"), std::string::npos);
}

TEST_F(TrainedSentencePiece, RefusesIdsOutsideItsVocabularyAndFilesThatAreNotModels) {
  const auto tokenizer = open_tokenizer(*dir_ + "/tiny.model");
  EXPECT_NE(
      error_message<InputError>([&] { tokenizer->decode({kVocabulary}); }).find("from 0 to 399"),
      std::string::npos);
  const std::string bad = *dir_ + "/bad.model";
  std::ofstream(bad) << "not a protobuf";
  const auto message = error_message<InputError>([&] { open_tokenizer(bad); });
  EXPECT_NE(message.find(bad), std::string::npos) << message;
  EXPECT_NE(message.find("SentencePiece"), std::string::npos) << message;
}

TEST_F(TrainedSentencePiece, AProgramThatHasNotEnabledThemIsToldWhichProgramsReadThem) {
  set_sentencepiece_opener(nullptr);
  const auto message = error_message<InputError>([&] { open_tokenizer(*dir_ + "/tiny.model"); });
  enable_sentencepiece_models();
  EXPECT_NE(message.find("tiny.model"), std::string::npos) << message;
  EXPECT_NE(message.find("hyperpipe-worker read SentencePiece"), std::string::npos) << message;
}

// JSON lines through the model into an indexed dataset, as `hyperpipe tokenize` does: each
// line a document of the ids the library gives its text, and its end-of-sentence id.
TEST_F(TrainedSentencePiece, TokenizesJsonLinesIntoAnIndexedDataset) {
  const auto tokenizer = open_tokenizer(*dir_ + "/tiny.model");
  const std::vector<std::string> texts = {"the stage of a device", "mixed cluster 12",
                                          "gradient \"layer\""};
  std::ofstream lines(*dir_ + "/docs.jsonl");
  for (const auto& text : texts) lines << nlohmann::json{{"body", text}}.dump() << "\n\n";
  lines.close();
  datasets::IndexedDatasetWriter writer(*dir_ + "/docs", datasets::TokenDtype::kU16);
  TokenizeOptions options;
  options.json_key = "body";
  options.append_end_of_document = true;
  tokenize_documents(*dir_ + "/docs.jsonl", *tokenizer, options, [&](std::vector<int64_t>&& ids) {
    writer.add_sequence(ids);
    writer.end_document();
  });
  writer.finish();
  const datasets::IndexedDataset data(*dir_ + "/docs");
  ASSERT_EQ(data.documents(), 3);
  for (int64_t d = 0; d < 3; ++d) {
    auto expected = tokenizer->encode(texts[static_cast<size_t>(d)]);
    expected.push_back(*tokenizer->end_of_document());
    EXPECT_EQ(data.tokens(d), expected);
  }
}

TEST(Tokenizers, BytesAreTheDefaultAndUnknownPathsAreRefused) {
  const auto bytes = open_tokenizer("bytes");
  EXPECT_EQ(bytes->vocab_size(), 256);
  EXPECT_EQ(bytes->encode("a\xff"), (std::vector<int64_t>{'a', 255}));
  EXPECT_EQ(bytes->decode({'h', 'i'}), "hi");
  EXPECT_NE(error_message<InputError>([] {
              open_tokenizer("/no/such/tokenizer");
            }).find("/no/such/tokenizer"),
            std::string::npos);
  const std::string other = hyperpipe::testing::write_temp_file("tok.txt", "x");
  EXPECT_NE(error_message<InputError>([&] { open_tokenizer(other); }).find("SentencePiece"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::tokenizers
