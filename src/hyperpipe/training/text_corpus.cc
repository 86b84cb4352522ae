#include "hyperpipe/training/text_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/tokenizers/tokenized_documents.h"

namespace hyperpipe::training {

std::string indexed_dataset_prefix(const std::string& path) {
  for (const char* suffix : {".idx", ".bin"}) {
    const std::string tail(suffix);
    if (path.size() > tail.size() &&
        path.compare(path.size() - tail.size(), tail.size(), tail) == 0) {
      return path.substr(0, path.size() - tail.size());
    }
  }
  return path;
}

bool is_indexed_dataset(const std::string& path) {
  const std::string prefix = indexed_dataset_prefix(path);
  return std::filesystem::is_regular_file(prefix + ".idx") &&
         std::filesystem::is_regular_file(prefix + ".bin");
}

TextCorpus TextCorpus::load(const std::string& path, int64_t seq_len, uint64_t seed, int64_t vocab,
                            const tokenizers::Tokenizer* tokenizer, const std::string& json_key) {
  if (is_indexed_dataset(path)) {
    const std::string prefix = indexed_dataset_prefix(path);
    auto tokens = std::make_shared<const datasets::IndexedDataset>(prefix);
    if (tokens->total_tokens() < seq_len + 1) {
      throw InputError(prefix + ".idx", "",
                       fmt::format("at least seq_len + 1 = {} tokens, got {}", seq_len + 1,
                                   tokens->total_tokens()));
    }
    return TextCorpus(std::move(tokens), prefix, seq_len, seed, vocab);
  }
  if (tokenizer != nullptr || datasets::is_json_lines(path)) {
    const tokenizers::ByteTokenizer bytes;
    const tokenizers::Tokenizer& reader = tokenizer != nullptr ? *tokenizer : bytes;
    tokenizers::TokenizeOptions options;
    options.json_key = json_key;
    options.append_end_of_document = reader.end_of_document().has_value();
    std::vector<int32_t> tokens;
    tokenizers::tokenize_documents(path, reader, options, [&](std::vector<int64_t>&& ids) {
      // Ids below the vocabulary, which the caller has checked to fit the model's (int32).
      tokens.insert(tokens.end(), ids.begin(), ids.end());
    });
    if (static_cast<int64_t>(tokens.size()) < seq_len + 1) {
      throw InputError(path, "",
                       fmt::format("at least seq_len + 1 = {} tokens ({}), got {}", seq_len + 1,
                                   reader.describe(), tokens.size()));
    }
    return TextCorpus(std::move(tokens), seq_len, seed);
  }
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
  shuffle(static_cast<int64_t>(text_.size()), seed);
}

TextCorpus::TextCorpus(std::vector<int32_t> tokens, int64_t seq_len, uint64_t seed)
    : tokens_(std::move(tokens)), seq_len_(seq_len) {
  shuffle(static_cast<int64_t>(tokens_.size()), seed);
}

TextCorpus::TextCorpus(std::shared_ptr<const datasets::IndexedDataset> tokens, std::string path,
                       int64_t seq_len, uint64_t seed, int64_t vocab)
    : indexed_(std::move(tokens)),
      indexed_path_(std::move(path)),
      vocab_(vocab),
      seq_len_(seq_len) {
  int64_t start = 0;
  for (int64_t s = 0; s < indexed_->sequences(); ++s) {
    sequence_starts_.push_back(start);
    start += indexed_->length(s);
  }
  shuffle(indexed_->total_tokens(), seed);
}

void TextCorpus::shuffle(int64_t tokens, uint64_t seed) {
  const int64_t windows = (tokens - 1) / seq_len_;
  for (int64_t w = 0; w < windows; ++w) order_.push_back(w * seq_len_);
  // mt19937_64 and a hand-rolled Fisher–Yates: std::shuffle's algorithm is not fixed by
  // the standard, and the order must not change with the library.
  std::mt19937_64 random(seed);
  for (int64_t i = windows - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(random() % static_cast<uint64_t>(i + 1));
    std::swap(order_[i], order_[j]);
  }
}

// The stream's tokens [start, start + seq_len + 1), across sequences as they fall.
std::vector<int64_t> TextCorpus::indexed_tokens(int64_t start) const {
  std::vector<int64_t> tokens;
  tokens.reserve(static_cast<size_t>(seq_len_ + 1));
  auto sequence = std::upper_bound(sequence_starts_.begin(), sequence_starts_.end(), start) -
                  sequence_starts_.begin() - 1;
  int64_t offset = start - sequence_starts_[static_cast<size_t>(sequence)];
  while (static_cast<int64_t>(tokens.size()) < seq_len_ + 1) {
    const auto part =
        indexed_->tokens(sequence, offset, seq_len_ + 1 - static_cast<int64_t>(tokens.size()));
    for (int64_t id : part) {
      if (id < 0 || id >= vocab_) {
        throw InputError(indexed_path_ + ".bin", fmt::format("sequence {}", sequence),
                         fmt::format("token ids from 0 to {} (the model's vocabulary); found {}",
                                     vocab_ - 1, id));
      }
    }
    tokens.insert(tokens.end(), part.begin(), part.end());
    ++sequence;
    offset = 0;
  }
  return tokens;
}

TextCorpus::IdCheck TextCorpus::check_token_ids(std::chrono::milliseconds budget) const {
  if (!indexed_) return {};
  const auto scan = indexed_->scan_ids(vocab_, std::chrono::steady_clock::now() + budget);
  if (scan.found) {
    throw InputError(indexed_path_ + ".bin", fmt::format("sequence {}", scan.found->sequence),
                     fmt::format("token ids from 0 to {} (the model's vocabulary); found {} at "
                                 "token {} of the sequence",
                                 vocab_ - 1, scan.found->id, scan.found->offset));
  }
  return {scan.tokens_scanned, indexed_->total_tokens()};
}

void TextCorpus::hold_out(int64_t windows) {
  if (windows <= 0) return;
  // The last of the shuffled windows: a sample of the whole data, none of it trained on.
  const auto split = order_.end() - windows;
  validation_.assign(split, order_.end());
  order_.erase(split, order_.end());
}

std::vector<int64_t> TextCorpus::sample(int64_t index) const {
  return window_at(order_[static_cast<size_t>(index % windows())]);
}

std::vector<int64_t> TextCorpus::validation_sample(int64_t index) const {
  return window_at(validation_[static_cast<size_t>(index % validation_windows())]);
}

std::vector<int64_t> TextCorpus::window_at(int64_t start) const {
  if (indexed_) return indexed_tokens(start);
  if (!tokens_.empty()) {
    const auto first = tokens_.begin() + start;
    return {first, first + seq_len_ + 1};
  }
  std::vector<int64_t> tokens(seq_len_ + 1);
  for (int64_t t = 0; t <= seq_len_; ++t) {
    tokens[t] = static_cast<unsigned char>(text_[static_cast<size_t>(start + t)]);
  }
  return tokens;
}

}  // namespace hyperpipe::training
