// Training data: the bytes of a text file as tokens (a vocabulary of 256); a text file or
// JSON lines through a tokenizer (tokenizers/tokenizer.h: the documents' ids back to back,
// each followed by the tokenizer's end of document where it has one); or the token ids of a
// Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx, datasets/indexed_dataset.h: its
// sequences back to back, as Megatron's GPT dataset reads them). Cut into windows of
// seq_len + 1 tokens (inputs and, shifted by one, targets), visited in an order shuffled
// once by a seed. Sample i of a run is always the same window, so any split of the batch
// over stages, ranks and restarts sees the same data; a process reads only the windows it
// draws (the indexed dataset is memory-mapped).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hyperpipe/datasets/json_lines.h"

namespace hyperpipe::datasets {
class IndexedDataset;
}
namespace hyperpipe::tokenizers {
class Tokenizer;
}

namespace hyperpipe::training {

// Byte-level tokens.
inline constexpr int64_t kByteVocabulary = 256;

// Whether `path` names a Megatron-LM indexed dataset: PREFIX, PREFIX.idx or PREFIX.bin with
// both files there.
bool is_indexed_dataset(const std::string& path);
// The PREFIX of a path naming an indexed dataset by its prefix or either of its files.
std::string indexed_dataset_prefix(const std::string& path);

class TextCorpus {
 public:
  // Throws InputError naming the file when it cannot be read or holds fewer than
  // seq_len + 1 tokens.
  // An indexed dataset's ids must be below `vocab` (the model's): a window holding one that
  // is not is refused (InputError naming the dataset) when it is drawn.
  // Text and JSON lines are read through `tokenizer` (none: the bytes; JSON lines need
  // one), whose vocabulary the caller has checked against the model's; indexed data is
  // already tokenized.
  static TextCorpus load(const std::string& path, int64_t seq_len, uint64_t seed,
                         int64_t vocab = kByteVocabulary,
                         const tokenizers::Tokenizer* tokenizer = nullptr,
                         const std::string& json_key = datasets::kDefaultJsonKey);
  TextCorpus(std::string text, int64_t seq_len, uint64_t seed);
  TextCorpus(std::vector<int32_t> tokens, int64_t seq_len, uint64_t seed);
  TextCorpus(std::shared_ptr<const datasets::IndexedDataset> tokens, std::string path,
             int64_t seq_len, uint64_t seed, int64_t vocab);

  int64_t seq_len() const { return seq_len_; }
  int64_t windows() const { return static_cast<int64_t>(order_.size()); }
  // Tokens [index's window, +seq_len + 1): inputs are the first seq_len, targets the last.
  std::vector<int64_t> sample(int64_t index) const;

  // Sets the last `windows` of the shuffled windows aside for validation (fewer than
  // windows()): training draws from the rest only, and validation_sample(i) is the i-th
  // (modulo their number) of those set aside.
  void hold_out(int64_t windows);
  int64_t validation_windows() const { return static_cast<int64_t>(validation_.size()); }
  std::vector<int64_t> validation_sample(int64_t index) const;

  // A launch's pre-flight: an indexed dataset's ids scanned against the vocabulary for at
  // most `budget` (InputError naming the dataset, the sequence and the id, as a run would
  // when it drew that window). The ids of text and JSON lines come from a tokenizer checked
  // against the vocabulary already, so none are scanned.
  struct IdCheck {
    int64_t scanned = 0;  // ids
    int64_t total = 0;    // of the indexed dataset (0: not one)
  };
  IdCheck check_token_ids(std::chrono::milliseconds budget) const;

 private:
  void shuffle(int64_t tokens, uint64_t seed);
  std::vector<int64_t> window_at(int64_t start) const;
  std::vector<int64_t> indexed_tokens(int64_t start) const;

  std::string text_;
  std::vector<int32_t> tokens_;  // of tokenized text
  std::shared_ptr<const datasets::IndexedDataset> indexed_;
  std::string indexed_path_;
  std::vector<int64_t> sequence_starts_;  // of the indexed dataset's sequences in its stream
  int64_t vocab_ = kByteVocabulary;
  int64_t seq_len_;
  std::vector<int64_t> order_;       // window starts, shuffled: the training windows
  std::vector<int64_t> validation_;  // those held out (hold_out)
};

// The index of sample `position` of step `step` in a run with `global_batch` sequences per
// step.
inline int64_t sample_index(int64_t step, int64_t global_batch, int64_t position) {
  return step * global_batch + position;
}

}  // namespace hyperpipe::training
