// A SentencePiece model (the tokenizer.model of LLaMA 2 and Mistral) through Debian's
// libsentencepiece: the library's own encoder and decoder, so ids equal what those models
// were trained on. Its own library (hyperpipe_sentencepiece), so that only the executables
// that read such models (`hyperpipe`, hyperpipe-worker) depend on libsentencepiece.
#pragma once

#include <memory>

#include "hyperpipe/tokenizers/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace hyperpipe::tokenizers {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // InputError naming the file when the library cannot load it.
  explicit SentencePieceTokenizer(const std::string& path);
  ~SentencePieceTokenizer() override;

  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override;
  std::optional<int64_t> end_of_document() const override;
  std::string describe() const override;
  std::string identity() const override;

 private:
  std::string path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

// Lets open_tokenizer read SentencePiece models in this process.
void enable_sentencepiece_models();

}  // namespace hyperpipe::tokenizers
