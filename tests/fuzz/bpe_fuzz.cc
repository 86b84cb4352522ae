// Fuzzes GPT-2's byte-level BPE on any text: UTF-8 text encodes to ids inside the
// vocabulary that decode back to the very text; other bytes are refused (InputError). The
// vocabulary holds merges across letters, spaces, digits, a multi-byte character and the
// end-of-text token, so the pre-tokenizer's every branch and the merge loop run.
#include <cstdlib>

#include "fuzz_input.h"
#include "hyperpipe/tokenizers/byte_level_bpe.h"

namespace {

const hyperpipe::tokenizers::ByteLevelBpe& tokenizer() {
  using hyperpipe::tokenizers::byte_character;
  static const hyperpipe::tokenizers::ByteLevelBpe bpe = [] {
    hyperpipe::tokenizers::BpeVocabulary vocabulary;
    for (int b = 0; b < 256; ++b) {
      vocabulary.ids[byte_character(static_cast<unsigned char>(b))] = b;
    }
    const std::string space = byte_character(' ');
    const std::string e_acute = byte_character(0xC3) + byte_character(0xA9);  // é in UTF-8
    vocabulary.merges = {{"t", "h"},
                         {space, "th"},
                         {"e", "r"},
                         {space, space},
                         {"1", "2"},
                         {"'", "s"},
                         {byte_character(0xC3), byte_character(0xA9)},
                         {e_acute, "t"},
                         {"th", "e"}};
    for (const auto& [left, right] : vocabulary.merges) {
      vocabulary.ids.emplace(left + right, static_cast<int64_t>(vocabulary.ids.size()));
    }
    const auto end = static_cast<int64_t>(vocabulary.ids.size());
    vocabulary.ids[hyperpipe::tokenizers::kGpt2EndOfText] = end;
    vocabulary.added_tokens.emplace_back(hyperpipe::tokenizers::kGpt2EndOfText, end);
    return hyperpipe::tokenizers::ByteLevelBpe(std::move(vocabulary), "fuzz");
  }();
  return bpe;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hyperpipe::fuzz::run_on_text(data, size, [](const std::string& text) {
    const auto ids = tokenizer().encode(text);  // InputError: not UTF-8
    for (int64_t id : ids) {
      if (id < 0 || id >= tokenizer().vocab_size()) std::abort();
    }
    if (tokenizer().decode(ids) != text) std::abort();
  });
}
