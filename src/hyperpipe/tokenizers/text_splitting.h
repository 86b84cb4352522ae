// How a byte-level BPE's tokenizer.json prepares text before merging, as Hugging Face's
// `tokenizers` runs it: the normalizer (none, or NFC as Qwen2's files ask) and the
// pre-tokenizer that cuts text into pieces, either GPT-2's ByteLevel with its own pattern
// or a Split by the file's own regular expression followed by a ByteLevel that only maps
// bytes (Llama 3's and Qwen2's files).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace hyperpipe::tokenizers {

struct TextSplitting {
  std::string pattern;  // PCRE2 with Unicode classes; each match, and each gap, is a piece
  bool nfc = false;     // compose to Unicode's NFC first
};

// InputError naming `path` and the field for a normalizer or pre-tokenizer of another kind.
TextSplitting read_text_splitting(const nlohmann::json& tokenizer, const std::string& path);

// `text` in Unicode's normalization form C; InputError naming `source` if it is not UTF-8.
std::string to_nfc(std::string_view text, const std::string& source);

}  // namespace hyperpipe::tokenizers
