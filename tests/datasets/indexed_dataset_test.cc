#include "hyperpipe/datasets/indexed_dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::datasets {
namespace {

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// An index as Megatron-LM lays it out, byte by byte (not by our writer): `lengths` and
// `pointers` per sequence, `starts` the document boundaries (0 … sequence count).
std::string index_bytes(uint8_t dtype, const std::vector<int32_t>& lengths,
                        const std::vector<int64_t>& pointers, const std::vector<int64_t>& starts,
                        uint64_t version = 1) {
  std::string out("MMIDIDX\0\0", 9);
  put<uint64_t>(out, version);
  put<uint8_t>(out, dtype);
  put<uint64_t>(out, lengths.size());
  put<uint64_t>(out, starts.size());
  for (int32_t length : lengths) put(out, length);
  for (int64_t pointer : pointers) put(out, pointer);
  for (int64_t start : starts) put(out, start);
  return out;
}

std::string write_files(const std::string& name, const std::string& index, const std::string& bin) {
  const std::string prefix = hyperpipe::testing::temp_path(name);
  std::ofstream(prefix + ".idx", std::ios::binary) << index;
  std::ofstream(prefix + ".bin", std::ios::binary) << bin;
  return prefix;
}

// uint16 tokens 5, 6, 7 | 65535 | (empty) in two documents, laid out by hand.
std::string hand_laid_bin() {
  std::string bin;
  for (uint16_t id : {5, 6, 7, 65535}) put(bin, id);
  return bin;
}

TEST(IndexedDataset, AFileLaidOutByHandReadsAsItsIndexSays) {
  const std::string prefix =
      write_files("by-hand", index_bytes(8, {3, 1, 0}, {0, 6, 8}, {0, 2, 3}), hand_laid_bin());
  const IndexedDataset data(prefix);
  EXPECT_EQ(data.dtype(), TokenDtype::kU16);
  EXPECT_EQ(data.sequences(), 3);
  EXPECT_EQ(data.documents(), 2);
  EXPECT_EQ(data.document_starts(), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(data.total_tokens(), 4);
  EXPECT_EQ(data.tokens(0), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(data.tokens(1), (std::vector<int64_t>{65535}));  // unsigned, not -1
  EXPECT_TRUE(data.tokens(2).empty());
  EXPECT_EQ(data.tokens(0, 1, 1), (std::vector<int64_t>{6}));
  EXPECT_EQ(data.tokens(0, 2, 10), (std::vector<int64_t>{7}));
}

TEST(IndexedDataset, WhatIsWrittenReadsBackInEveryTokenType) {
  const std::vector<std::vector<int64_t>> sequences{{1, 2, 3}, {}, {100, 0, 7, 7}, {42}};
  for (const auto dtype :
       {TokenDtype::kU8, TokenDtype::kI8, TokenDtype::kI16, TokenDtype::kU16, TokenDtype::kI32,
        TokenDtype::kI64, TokenDtype::kF32, TokenDtype::kF64}) {
    const std::string prefix =
        hyperpipe::testing::temp_path(std::string("round-trip-") + to_string(dtype));
    write_indexed_dataset(prefix, sequences, dtype, {0, 2});
    const IndexedDataset data(prefix);
    EXPECT_EQ(data.dtype(), dtype);
    ASSERT_EQ(data.sequences(), 4) << to_string(dtype);
    for (int64_t s = 0; s < 4; ++s) EXPECT_EQ(data.tokens(s), sequences[s]) << to_string(dtype);
    EXPECT_EQ(data.document_starts(), (std::vector<int64_t>{0, 2, 4}));
  }
  // Megatron's own choice for vocabularies under 65 500: uint16, up to 65 535.
  const std::string prefix = hyperpipe::testing::temp_path("too-big");
  EXPECT_THROW(write_indexed_dataset(prefix, {{65536}}, TokenDtype::kU16, {0}), InputError);
  EXPECT_THROW(write_indexed_dataset(prefix, {{-1}}, TokenDtype::kU8, {0}), InputError);
  EXPECT_THROW(write_indexed_dataset(prefix, {{1}, {2}}, TokenDtype::kU8, {1}), InputError);
}

struct BadIndex {
  const char* name;
  std::string index;
  const char* why;
};

class IndexedDatasetRefuses : public ::testing::TestWithParam<BadIndex> {};

// Each is refused, naming the index and what is wrong, before a token is read.
TEST_P(IndexedDatasetRefuses, SayingWhy) {
  const auto& bad = GetParam();
  const std::string prefix = write_files(bad.name, bad.index, hand_laid_bin());
  try {
    const IndexedDataset data(prefix);
    FAIL() << "accepted";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(prefix + ".idx"), std::string::npos) << message;
    EXPECT_NE(message.find(bad.why), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BadIndexes, IndexedDatasetRefuses,
    ::testing::Values(
        BadIndex{"not-an-index", "{\"not\": \"megatron\"}......................", "MMIDIDX"},
        BadIndex{"version-two", index_bytes(8, {3}, {0}, {0, 1}, 2), "version: 1; got 2"},
        BadIndex{"unknown-dtype", index_bytes(9, {3}, {0}, {0, 1}), "a code from 1 to 8; got 9"},
        BadIndex{"past-the-end-of-bin", index_bytes(8, {3, 2}, {0, 6}, {0, 2}),
                 "they are at bytes [6, 10)"},
        BadIndex{"negative-length", index_bytes(8, {-3}, {0}, {0, 1}), "a length of 0 or more"},
        BadIndex{"cut-short", index_bytes(8, {3, 1, 0}, {0, 6, 8}, {0, 2, 3}).substr(0, 60),
                 "counts whose arrays fill the index"},
        BadIndex{"documents-past-the-sequences", index_bytes(8, {3}, {0}, {0, 2}),
                 "ascending sequence indices from 0 to 1"},
        BadIndex{"documents-not-ending-at-the-count", index_bytes(8, {3, 1}, {0, 6}, {0, 1}),
                 "0 first and 2 (the sequence count) last"}),
    hyperpipe::testing::NameOfCase());

TEST(IndexedDatasetWriter, StreamsSequencesIntoDocumentsAsTheIndexRecordsThem) {
  const std::string prefix = hyperpipe::testing::temp_path("streamed");
  {
    IndexedDatasetWriter writer(prefix, TokenDtype::kU16);
    writer.add_sequence(std::vector<int64_t>{1, 2});
    writer.add_sequence(std::vector<int64_t>{3});
    writer.end_document();
    writer.end_document();  // an empty document is not recorded
    writer.add_sequence(std::vector<int64_t>{65535, 0, 4});
    EXPECT_EQ(writer.sequences(), 3);
    EXPECT_EQ(writer.tokens(), 6);
    writer.finish();
    EXPECT_EQ(writer.documents(), 2);
  }
  const IndexedDataset data(prefix);
  EXPECT_EQ(data.document_starts(), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(data.tokens(2), (std::vector<int64_t>{65535, 0, 4}));
  EXPECT_EQ(data.tokens(1), (std::vector<int64_t>{3}));
}

TEST(IndexedDatasetWriter, LeavesNoFilesWhenItFailsBeforeFinishing) {
  const std::string prefix = hyperpipe::testing::temp_path("abandoned");
  {
    IndexedDatasetWriter writer(prefix, TokenDtype::kU8);
    writer.add_sequence(std::vector<int64_t>{1});
    EXPECT_THROW(writer.add_sequence(std::vector<int64_t>{256}), InputError);
  }
  EXPECT_FALSE(std::filesystem::exists(prefix + ".bin"));
  EXPECT_FALSE(std::filesystem::exists(prefix + ".idx"));
  const auto dir = std::filesystem::path(prefix).parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find("abandoned"), std::string::npos)
        << entry.path();
  }
}

TEST(IndexedDataset, AMissingBinIsNamed) {
  const std::string prefix = hyperpipe::testing::temp_path("no-bin");
  std::ofstream(prefix + ".idx", std::ios::binary) << index_bytes(8, {}, {}, {0});
  std::filesystem::remove(prefix + ".bin");
  EXPECT_NE(hyperpipe::testing::error_message<InputError>([&] {
              IndexedDataset{prefix};
            }).find(prefix + ".bin"),
            std::string::npos);
}

// The scan finds the first id outside the vocabulary, in stream order, as reading every
// sequence's ids one by one finds it.
TEST(IndexedDataset, AScanFindsTheFirstIdOutsideTheVocabularyAsReadingEveryIdDoes) {
  const std::string prefix = hyperpipe::testing::temp_path("scan");
  std::vector<std::vector<int64_t>> sequences;
  for (int s = 0; s < 40; ++s) {
    std::vector<int64_t> ids;
    for (int i = 0; i < s % 7; ++i) ids.push_back((s * 31 + i * 17) % 300);  // some empty
    sequences.push_back(ids);
  }
  write_indexed_dataset(prefix, sequences, TokenDtype::kI32, {0, 10, 25});
  const IndexedDataset data(prefix);
  const auto later = std::chrono::steady_clock::now() + std::chrono::hours(1);
  for (const int64_t vocab : {1, 100, 250, 299, 300, 1000}) {
    std::optional<OutOfVocabulary> expected;
    int64_t read = 0;
    for (int64_t s = 0; s < data.sequences() && !expected; ++s) {
      const auto ids = data.tokens(s);
      for (size_t i = 0; i < ids.size() && !expected; ++i) {
        ++read;
        if (ids[i] >= vocab) expected = OutOfVocabulary{s, static_cast<int64_t>(i), ids[i]};
      }
    }
    const IdScan scan = data.scan_ids(vocab, later);
    EXPECT_EQ(scan.tokens_scanned, read) << vocab;
    ASSERT_EQ(scan.found.has_value(), expected.has_value()) << vocab;
    if (!expected) continue;
    EXPECT_EQ(scan.found->sequence, expected->sequence) << vocab;
    EXPECT_EQ(scan.found->offset, expected->offset) << vocab;
    EXPECT_EQ(scan.found->id, expected->id) << vocab;
  }
  // Negative ids are outside too.
  write_indexed_dataset(prefix, {{3, -2, 5}}, TokenDtype::kI16, {0});
  const IdScan negative = IndexedDataset(prefix).scan_ids(10, later);
  ASSERT_TRUE(negative.found);
  EXPECT_EQ(negative.found->id, -2);
  EXPECT_EQ(negative.found->offset, 1);
}

// A deadline passed stops the scan at its first look at the clock, short of the end.
TEST(IndexedDataset, AScanStopsAtItsDeadline) {
  const std::string prefix = hyperpipe::testing::temp_path("scan-deadline");
  // Sequences of 2^16 ids: the clock is read after every 2^20 ids.
  std::vector<std::vector<int64_t>> sequences(40, std::vector<int64_t>(int64_t{1} << 16, 1));
  write_indexed_dataset(prefix, sequences, TokenDtype::kU16, {0});
  const IndexedDataset data(prefix);
  const IdScan scan = data.scan_ids(2, std::chrono::steady_clock::now());
  EXPECT_FALSE(scan.found);
  EXPECT_GT(scan.tokens_scanned, 0);
  EXPECT_LT(scan.tokens_scanned, data.total_tokens());
  EXPECT_EQ(
      data.scan_ids(2, std::chrono::steady_clock::now() + std::chrono::hours(1)).tokens_scanned,
      data.total_tokens());
}

}  // namespace
}  // namespace hyperpipe::datasets
