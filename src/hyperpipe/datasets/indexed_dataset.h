// Megatron-LM's indexed dataset (MMapIndexedDataset, index version 1): the token ids of
// every sequence back to back in PREFIX.bin, and in PREFIX.idx where each starts, how long
// it is, and which sequences make each document. What most pre-training pipelines already
// have on disk (Megatron's tools/preprocess_data.py writes it). Both files are
// memory-mapped and every number of the index is checked against them before a token is
// read: a file that fails is refused with its path and the reason. Plain bytes: no
// libtorch.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hyperpipe/common/mapped_file.h"
#include "hyperpipe/common/output_file.h"

namespace hyperpipe::datasets {

// The index's element-type codes (Megatron's DType enum).
enum class TokenDtype : uint8_t {
  kU8 = 1,
  kI8 = 2,
  kI16 = 3,
  kI32 = 4,
  kI64 = 5,
  kF64 = 6,
  kF32 = 7,
  kU16 = 8,
};

size_t token_size(TokenDtype dtype);
const char* to_string(TokenDtype dtype);

// The index file's first bytes, and its version (the only one written since 2020).
inline constexpr char kIndexMagic[] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIndexVersion = 1;

// The first token id outside [0, vocab) that a scan met, and where.
struct OutOfVocabulary {
  int64_t sequence = 0;
  int64_t offset = 0;  // within the sequence
  int64_t id = 0;
};

// What a scan of the token ids found, and how far it got before its deadline.
struct IdScan {
  int64_t tokens_scanned = 0;
  std::optional<OutOfVocabulary> found;
};

class IndexedDataset {
 public:
  // Opens PREFIX.idx and PREFIX.bin; InputError naming the file and what is wrong.
  explicit IndexedDataset(const std::string& prefix);

  TokenDtype dtype() const { return dtype_; }
  int64_t sequences() const { return static_cast<int64_t>(lengths_.size()); }
  // Documents, each a range of sequences [document_starts()[d], document_starts()[d + 1]).
  int64_t documents() const { return static_cast<int64_t>(document_starts_.size()) - 1; }
  const std::vector<int64_t>& document_starts() const { return document_starts_; }
  int64_t length(int64_t sequence) const { return lengths_.at(static_cast<size_t>(sequence)); }
  int64_t total_tokens() const { return total_tokens_; }
  // Token ids of `sequence`, from `offset` on, at most `count` of them.
  std::vector<int64_t> tokens(int64_t sequence, int64_t offset = 0, int64_t count = -1) const;
  // Scans the ids sequence by sequence for one outside [0, vocab), stopping at the first
  // or at `deadline` (a pre-flight check of a file of terabytes must not take hours).
  IdScan scan_ids(int64_t vocab, std::chrono::steady_clock::time_point deadline) const;

 private:
  MappedFile bin_;
  TokenDtype dtype_ = TokenDtype::kU16;
  std::vector<int64_t> lengths_;   // tokens per sequence
  std::vector<int64_t> pointers_;  // byte offset of each sequence in the .bin
  std::vector<int64_t> document_starts_;
  int64_t total_tokens_ = 0;
};

// Writes an indexed dataset sequence by sequence, the tokens straight to a temporary file
// beside PREFIX.bin: finish() puts PREFIX.bin, then PREFIX.idx, in place. Destroyed before
// finish(), it leaves neither file behind. What Megatron's preprocess_data.py writes:
// `hyperpipe tokenize` builds on it.
class IndexedDatasetWriter {
 public:
  // InputError naming PREFIX.bin when its directory cannot be written.
  IndexedDatasetWriter(std::string prefix, TokenDtype dtype);
  ~IndexedDatasetWriter();

  // InputError when an id does not fit the dtype.
  void add_sequence(std::span<const int64_t> ids);
  // The sequences added since the last document end make one document (none: nothing).
  void end_document();
  // Ends the last document and writes the index.
  void finish();

  int64_t sequences() const { return static_cast<int64_t>(lengths_.size()); }
  int64_t documents() const { return static_cast<int64_t>(document_ends_.size()) - 1; }
  int64_t tokens() const { return tokens_; }

 private:
  std::string prefix_;
  TokenDtype dtype_;
  int64_t low_ = 0;
  int64_t high_ = 0;
  AtomicFileWriter bin_;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> pointers_;
  std::vector<int64_t> document_ends_{0};  // the index's document list: 0, then each end
  int64_t tokens_ = 0;
};

// Writes `sequences` (token ids, each fitting `dtype`) as PREFIX.bin and PREFIX.idx, the
// documents starting at `document_starts` (sequence indices, from 0; the end is added),
// each file whole or not at all. InputError when an id does not fit or the starts are not
// ascending.
void write_indexed_dataset(const std::string& prefix,
                           const std::vector<std::vector<int64_t>>& sequences, TokenDtype dtype,
                           const std::vector<int64_t>& document_starts);

}  // namespace hyperpipe::datasets
