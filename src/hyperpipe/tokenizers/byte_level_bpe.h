// GPT-2's byte-level BPE, as Hugging Face ships it: vocab.json + merges.txt, or one
// tokenizer.json (GPT-2's, Llama 3's or Qwen2's: text_splitting.h). Text is cut into pieces
// by GPT-2's pre-tokenizer pattern (letters, numbers, other symbols, each with the space
// before them; whitespace runs) or the file's own, each piece's
// bytes are written as the printable characters GPT-2 maps them to, and pairs of symbols are
// merged lowest rank first until no listed pair is left. Decoding maps the characters back
// to bytes, so any UTF-8 text round-trips. The pattern runs in PCRE2 with Unicode classes
// (\p{L}, \p{N}, \s), as GPT-2's Python `regex` runs it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hyperpipe/tokenizers/text_splitting.h"
#include "hyperpipe/tokenizers/tokenizer.h"

namespace hyperpipe::tokenizers {

// GPT-2's pre-tokenizer (encoder.py in openai/gpt-2; Hugging Face's ByteLevel with
// use_regex).
inline constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The text GPT-2 (and Qwen2) uses as its end of document.
inline constexpr char kGpt2EndOfText[] = "<|endoftext|>";
// Llama 3's end of document (its tokenizer.json's added token 128001).
inline constexpr char kLlama3EndOfText[] = "<|end_of_text|>";

struct BpeVocabulary {
  std::unordered_map<std::string, int64_t> ids;               // token (mapped bytes) → id
  std::vector<std::pair<std::string, std::string>> merges;    // by rank, first merged first
  std::vector<std::pair<std::string, int64_t>> added_tokens;  // matched whole in the text
  TextSplitting splitting{kGpt2Pattern, false};
  // A piece that is a token whole is that token, merges or not (Llama 3's ignore_merges).
  bool ignore_merges = false;
};

class ByteLevelBpe final : public Tokenizer {
 public:
  // InputError naming the file and the field when a file is not what it should be.
  static std::unique_ptr<ByteLevelBpe> from_vocab_and_merges(const std::string& vocab_json,
                                                             const std::string& merges_txt);
  static std::unique_ptr<ByteLevelBpe> from_tokenizer_json(const std::string& path);

  // `source` names where the vocabulary came from in messages.
  ByteLevelBpe(BpeVocabulary vocabulary, std::string source);
  ~ByteLevelBpe() override;

  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  std::optional<int64_t> end_of_document() const override { return end_of_text_; }
  std::string describe() const override { return "byte-level BPE from " + source_; }
  std::string identity() const override { return identity_; }

 private:
  void encode_plain(std::string_view text, std::vector<int64_t>& ids) const;
  void encode_piece(std::string_view piece, std::vector<int64_t>& ids) const;
  std::vector<int64_t> merge(std::string_view piece) const;

  std::string source_;
  std::unordered_map<std::string, int64_t> ids_;
  std::unordered_map<std::string, int> merge_ranks_;  // "left right" → rank
  std::vector<std::pair<std::string, int64_t>> added_tokens_;
  std::vector<std::string> tokens_;  // by id; "" where no token has the id
  std::vector<bool> is_added_;       // by id
  std::optional<int64_t> end_of_text_;
  bool nfc_ = false;
  bool ignore_merges_ = false;
  std::string identity_;
  std::shared_ptr<void> pattern_;  // the compiled pre-tokenizer (pcre2_code)

  // Pieces repeat (words); their ids are kept, up to kPieceCacheEntries.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

// Each byte's character in GPT-2's mapping, as UTF-8: printable Latin-1 bytes stand for
// themselves, the rest are moved to U+0100 on.
const std::string& byte_character(unsigned char byte);

}  // namespace hyperpipe::tokenizers
