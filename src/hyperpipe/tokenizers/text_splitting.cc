#include "hyperpipe/tokenizers/text_splitting.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "hyperpipe/common/error.h"
#include "hyperpipe/tokenizers/byte_level_bpe.h"

namespace hyperpipe::tokenizers {
namespace {

constexpr char kSupported[] =
    "GPT-2's {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}, or "
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
    "{\"Regex\": ...}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
    "\"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]} (Llama 3's, Qwen2's)";

bool is_byte_level(const nlohmann::json& pre, bool use_regex) {
  return pre.is_object() && pre.value("type", "") == "ByteLevel" &&
         !pre.value("add_prefix_space", false) && pre.value("use_regex", true) == use_regex;
}

// A Split that keeps each match and each gap as a piece of its own, by a regex.
const nlohmann::json* isolated_split_pattern(const nlohmann::json& split) {
  if (!split.is_object() || split.value("type", "") != "Split" ||
      split.value("behavior", "") != "Isolated" || split.value("invert", false) ||
      !split.contains("pattern") || !split["pattern"].is_object() ||
      !split["pattern"].contains("Regex") || !split["pattern"]["Regex"].is_string()) {
    return nullptr;
  }
  return &split["pattern"]["Regex"];
}

}  // namespace

TextSplitting read_text_splitting(const nlohmann::json& tokenizer, const std::string& path) {
  TextSplitting splitting;
  const auto& normalizer =
      tokenizer.contains("normalizer") ? tokenizer["normalizer"] : nlohmann::json();
  if (normalizer.is_object() && normalizer.value("type", "") == "NFC") {
    splitting.nfc = true;
  } else if (!normalizer.is_null()) {
    throw InputError(path, "normalizer", "null or {\"type\": \"NFC\"} (Qwen2's)");
  }
  const auto& pre =
      tokenizer.contains("pre_tokenizer") ? tokenizer["pre_tokenizer"] : nlohmann::json();
  if (is_byte_level(pre, true)) {
    splitting.pattern = kGpt2Pattern;
    return splitting;
  }
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2 &&
      is_byte_level(pre["pretokenizers"][1], false)) {
    if (const auto* pattern = isolated_split_pattern(pre["pretokenizers"][0])) {
      splitting.pattern = pattern->get<std::string>();
      return splitting;
    }
  }
  throw InputError(path, "pre_tokenizer", kSupported);
}

std::string to_nfc(std::string_view text, const std::string& source) {
  utf8proc_uint8_t* composed = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &composed,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0) {
    throw InputError(source, "",
                     fmt::format("UTF-8 text to normalize ({})", utf8proc_errmsg(length)));
  }
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(composed, &std::free);
  return {reinterpret_cast<const char*>(composed), static_cast<size_t>(length)};
}

}  // namespace hyperpipe::tokenizers
