#include "hyperpipe/runtime/text_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"

namespace hyperpipe::runtime {

TextCorpus TextCorpus::load(const std::string& path, int64_t seq_len, uint64_t seed) {
  std::string text = read_input_file(path, kMaxCorpusBytes, "the training data (a text file)");
  if (static_cast<int64_t>(text.size()) < seq_len + 1) {
    throw InputError(
        path, "",
        fmt::format("at least seq_len + 1 = {} bytes of text, got {}", seq_len + 1, text.size()));
  }
  return TextCorpus(std::move(text), seq_len, seed);
}

TextCorpus::TextCorpus(std::string text, int64_t seq_len, uint64_t seed)
    : text_(std::move(text)), seq_len_(seq_len) {
  const int64_t windows = (static_cast<int64_t>(text_.size()) - 1) / seq_len_;
  for (int64_t w = 0; w < windows; ++w) order_.push_back(w * seq_len_);
  // mt19937_64 and a hand-rolled Fisher–Yates: std::shuffle's algorithm is not fixed by
  // the standard, and the order must not change with the library.
  std::mt19937_64 random(seed);
  for (int64_t i = windows - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(random() % static_cast<uint64_t>(i + 1));
    std::swap(order_[i], order_[j]);
  }
}

std::vector<int64_t> TextCorpus::sample(int64_t index) const {
  const int64_t start = order_[static_cast<size_t>(index % windows())];
  std::vector<int64_t> tokens(seq_len_ + 1);
  for (int64_t t = 0; t <= seq_len_; ++t) {
    tokens[t] = static_cast<unsigned char>(text_[static_cast<size_t>(start + t)]);
  }
  return tokens;
}

}  // namespace hyperpipe::runtime
