#include "hyperpipe/tokenizers/sentencepiece_tokenizer.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::tokenizers {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& path)
    : path_(path), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->Load(path);
  if (!status.ok()) {
    throw InputError(path, "",
                     fmt::format("a SentencePiece model (libsentencepiece: {})", status.message()));
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) {
    throw InputError(path_, "", fmt::format("text it can encode ({})", status.message()));
  }
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int> pieces;
  pieces.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw InputError(path_, "",
                       fmt::format("token ids from 0 to {}; found {}", vocab_size() - 1, id));
    }
    pieces.push_back(static_cast<int>(id));
  }
  std::string text;
  const auto status = processor_->Decode(pieces, &text);
  if (!status.ok()) {
    throw InputError(path_, "", fmt::format("ids it can decode ({})", status.message()));
  }
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const {
  return processor_->GetPieceSize();
}

std::optional<int64_t> SentencePieceTokenizer::end_of_document() const {
  // The library answers -1 for a model trained without an end-of-sentence piece.
  const int eos = processor_->eos_id();
  if (eos < 0) return std::nullopt;
  return eos;
}

std::string SentencePieceTokenizer::describe() const {
  return fmt::format("SentencePiece from {}", path_);
}

}  // namespace hyperpipe::tokenizers

namespace hyperpipe::tokenizers {

void enable_sentencepiece_models() {
  set_sentencepiece_opener([](const std::string& path) -> std::unique_ptr<Tokenizer> {
    return std::make_unique<SentencePieceTokenizer>(path);
  });
}

std::string SentencePieceTokenizer::identity() const {
  const std::string model = processor_->serialized_model_proto();
  return fmt::format("SentencePiece, {} tokens, CRC-32 {:08x}", vocab_size(),
                     crc32(model.data(), model.size()));
}

}  // namespace hyperpipe::tokenizers
