#include "hyperpipe/tokenizers/tokenized_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "test_files.h"

namespace hyperpipe::tokenizers {
namespace {

// Megatron's rule: uint16 while every id fits below its limit, int32 from there.
TEST(TokenizedDataset, TheSmallestIdTypeTheVocabularyFits) {
  EXPECT_EQ(best_fitting_dtype(256), datasets::TokenDtype::kU16);
  EXPECT_EQ(best_fitting_dtype(kUint16VocabularyLimit - 1), datasets::TokenDtype::kU16);
  EXPECT_EQ(best_fitting_dtype(kUint16VocabularyLimit), datasets::TokenDtype::kI32);
  EXPECT_EQ(best_fitting_dtype(151936), datasets::TokenDtype::kI32);  // Qwen2's vocabulary
}

// Each text file is a document and each JSON line one, in the order given; the dataset
// reads back the bytes as ids, in a folder made for it.
TEST(TokenizedDataset, EveryInputsDocumentsInOrder) {
  const std::string folder = hyperpipe::testing::fresh_directory("tokenized");
  std::ofstream(folder + "/a.txt") << "hello";
  std::ofstream(folder + "/b.jsonl") << "{\"text\": \"ab\"}\n{\"text\": \"xyz\"}\n";
  const auto tokenizer = open_tokenizer(std::string(kByteTokenizerName));
  const std::string prefix = folder + "/made/here/corpus";
  const TokenizedDataset written =
      write_tokenized_dataset({folder + "/a.txt", folder + "/b.jsonl"}, *tokenizer, {}, prefix);
  EXPECT_EQ(written.dtype, datasets::TokenDtype::kU16);
  EXPECT_EQ(written.documents, 3);
  EXPECT_EQ(written.tokens, 10);
  const datasets::IndexedDataset read(prefix);
  ASSERT_EQ(read.documents(), 3);
  EXPECT_EQ(read.total_tokens(), 10);
  EXPECT_EQ(read.tokens(read.document_starts()[1]), (std::vector<int64_t>{'a', 'b'}));
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace hyperpipe::tokenizers
