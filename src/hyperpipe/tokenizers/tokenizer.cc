#include "hyperpipe/tokenizers/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>

#include "hyperpipe/common/error.h"
#include "hyperpipe/tokenizers/byte_level_bpe.h"

namespace hyperpipe::tokenizers {

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= kVocabulary) {
      throw InputError("token ids", "", fmt::format("byte values 0 to 255; found {}", id));
    }
    text.push_back(static_cast<char>(id));
  }
  return text;
}

namespace {

namespace fs = std::filesystem;

TokenizerOpener sentencepiece_opener = nullptr;

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path) {
  if (sentencepiece_opener == nullptr) {
    throw InputError(path, "",
                     "a tokenizer this program can read: it was built without SentencePiece "
                     "(enable_sentencepiece_models() never ran); `hyperpipe` and "
                     "hyperpipe-worker read SentencePiece models");
  }
  return sentencepiece_opener(path);
}

bool has_name(const fs::path& path, std::string_view name) {
  return path.filename() == name;
}

std::unique_ptr<Tokenizer> open_in_directory(const fs::path& dir) {
  if (fs::is_regular_file(dir / "tokenizer.json")) {
    return ByteLevelBpe::from_tokenizer_json((dir / "tokenizer.json").string());
  }
  if (fs::is_regular_file(dir / "vocab.json")) {
    return ByteLevelBpe::from_vocab_and_merges((dir / "vocab.json").string(),
                                               (dir / "merges.txt").string());
  }
  if (fs::is_regular_file(dir / "tokenizer.model")) {
    return open_sentencepiece((dir / "tokenizer.model").string());
  }
  throw InputError(dir.string(), "",
                   "a tokenizer directory holding tokenizer.json, vocab.json + merges.txt, or "
                   "tokenizer.model (SentencePiece)");
}

}  // namespace

void set_sentencepiece_opener(TokenizerOpener opener) {
  sentencepiece_opener = opener;
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  if (path == kByteTokenizerName) return std::make_unique<ByteTokenizer>();
  const fs::path file(path);
  if (fs::is_directory(file)) return open_in_directory(file);
  if (!fs::is_regular_file(file)) {
    throw InputError(path, "",
                     fmt::format("an existing tokenizer file or directory, or \"{}\" for "
                                 "byte-level tokens",
                                 kByteTokenizerName));
  }
  if (file.extension() == ".model") return open_sentencepiece(path);
  if (has_name(file, "vocab.json")) {
    return ByteLevelBpe::from_vocab_and_merges(path, (file.parent_path() / "merges.txt").string());
  }
  if (file.extension() == ".json") return ByteLevelBpe::from_tokenizer_json(path);
  throw InputError(path, "",
                   "a SentencePiece model (*.model), a Hugging Face tokenizer.json, or a GPT-2 "
                   "vocab.json with merges.txt beside it");
}

}  // namespace hyperpipe::tokenizers
