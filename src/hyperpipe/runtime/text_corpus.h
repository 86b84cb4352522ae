// Training data from a text file: bytes as tokens (a vocabulary of 256), cut into
// windows of seq_len + 1 tokens (inputs and, shifted by one, targets), visited in an
// order shuffled once by a seed. Sample i of a run is always the same window, so any
// split of the batch over stages, ranks and restarts sees the same data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hyperpipe::runtime {

// Byte-level tokens.
inline constexpr int64_t kByteVocabulary = 256;

class TextCorpus {
 public:
  // Throws InputError naming the file when it cannot be read or holds fewer than
  // seq_len + 1 bytes.
  static TextCorpus load(const std::string& path, int64_t seq_len, uint64_t seed);
  TextCorpus(std::string text, int64_t seq_len, uint64_t seed);

  int64_t seq_len() const { return seq_len_; }
  int64_t windows() const { return static_cast<int64_t>(order_.size()); }
  // Tokens [index's window, +seq_len + 1): inputs are the first seq_len, targets the last.
  std::vector<int64_t> sample(int64_t index) const;

 private:
  std::string text_;
  int64_t seq_len_;
  std::vector<int64_t> order_;  // window starts, shuffled
};

// The index of sample `position` of step `step` in a run with `global_batch` sequences per
// step.
inline int64_t sample_index(int64_t step, int64_t global_batch, int64_t position) {
  return step * global_batch + position;
}

}  // namespace hyperpipe::runtime
