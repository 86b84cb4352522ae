// Text to token ids and back. Byte-level tokens (a vocabulary of 256, the bytes as they
// are) stay the default; a Hugging Face GPT-2-style byte-level BPE (byte_level_bpe.h) and a
// SentencePiece model (sentencepiece_tokenizer.h, LLaMA 2, Mistral) are read from the files
// those projects ship. No libtorch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hyperpipe::tokenizers {

// The name `open_tokenizer` takes for the byte-level default.
inline constexpr std::string_view kByteTokenizerName = "bytes";

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // InputError for an id outside the vocabulary.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // One more than the largest id it can produce: what the model's embedding must hold.
  virtual int64_t vocab_size() const = 0;
  // The end-of-document token, when the tokenizer has one (appended between documents).
  virtual std::optional<int64_t> end_of_document() const = 0;
  // What it is and where it came from, for logs and run identities ("byte-level BPE from
  // DIR/tokenizer.json").
  virtual std::string describe() const = 0;
  // What decides its ids, wherever its files lie ("byte-level BPE, 50257 tokens, CRC-32
  // 1a2b3c4d" over its vocabulary and merges): a checkpoint's run records it, so a resumed
  // run cannot change tokenizer unnoticed.
  virtual std::string identity() const = 0;
};

// The bytes of the text, each a token.
class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int64_t kVocabulary = 256;

  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return kVocabulary; }
  std::optional<int64_t> end_of_document() const override { return std::nullopt; }
  std::string describe() const override { return "byte-level tokens"; }
  std::string identity() const override { return std::string(kByteTokenizerName); }
};

// SentencePiece models open only where enable_sentencepiece_models()
// (sentencepiece_tokenizer.h) has run, so that this library does not depend on
// libsentencepiece: `hyperpipe` and hyperpipe-worker run it. (Debian's libtorch 1.13 loaded a
// shared libprotobuf that crashed beside libsentencepiece's own copy; PyPI's libtorch keeps its
// protobuf hidden, and the two now share the worker.)
using TokenizerOpener = std::unique_ptr<Tokenizer> (*)(const std::string& path);
void set_sentencepiece_opener(TokenizerOpener opener);

// The tokenizer at `path`, by what is there:
//   "bytes"                               the byte-level default;
//   FILE.model                            a SentencePiece model;
//   tokenizer.json                        a Hugging Face byte-level BPE;
//   vocab.json (with merges.txt beside)   a GPT-2 byte-level BPE;
//   a directory                           its tokenizer.json, else vocab.json + merges.txt,
//                                         else tokenizer.model (SentencePiece).
// InputError naming the path and what it should be otherwise.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path);

}  // namespace hyperpipe::tokenizers
