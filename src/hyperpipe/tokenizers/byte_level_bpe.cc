#include "hyperpipe/tokenizers/byte_level_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"

namespace hyperpipe::tokenizers {

namespace {

// Distinct pieces whose ids are kept: far more than the words of a language, far less than
// memory (a piece and its ids are under a kilobyte).
constexpr size_t kPieceCacheEntries = size_t{1} << 20;

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
  return out;
}

// GPT-2's bytes_to_unicode(): the bytes '!'..'~', '¡'..'¬' and '®'..'ÿ' keep their code
// point; the other 68 take U+0100, U+0101, … in byte order.
const std::array<std::string, 256>& byte_characters() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> characters;
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      characters[static_cast<size_t>(b)] = utf8(printable ? static_cast<char32_t>(b) : next++);
    }
    return characters;
  }();
  return table;
}

const std::unordered_map<std::string, unsigned char>& character_bytes() {
  static const std::unordered_map<std::string, unsigned char> table = [] {
    std::unordered_map<std::string, unsigned char> bytes;
    for (int b = 0; b < 256; ++b) {
      bytes.emplace(byte_characters()[static_cast<size_t>(b)], static_cast<unsigned char>(b));
    }
    return bytes;
  }();
  return table;
}

// The length of the UTF-8 character starting with `lead` (1 for a stray byte).
size_t character_length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

nlohmann::json parse_json(const std::string& path, const std::string& what) {
  try {
    return nlohmann::json::parse(read_input_file(path, kMaxSpecFileBytes, what));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, "", fmt::format("{} (JSON): {}", what, e.what()));
  }
}

std::unordered_map<std::string, int64_t> read_vocab_object(const nlohmann::json& vocab,
                                                           const std::string& path,
                                                           const std::string& field) {
  if (!vocab.is_object() || vocab.empty()) {
    throw InputError(path, field, "an object from each token to its id");
  }
  std::unordered_map<std::string, int64_t> ids;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= std::numeric_limits<int32_t>::max()) {
      throw InputError(path, field + "." + token, "a token id from 0 to 2^31 - 2");
    }
    ids.emplace(token, id.get<int64_t>());
  }
  return ids;
}

std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& path,
                                                const std::string& where) {
  const auto space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 >= line.size() ||
      line.find(' ', space + 1) != std::string::npos) {
    throw InputError(path, where, fmt::format("a merge \"LEFT RIGHT\"; got \"{}\"", line));
  }
  return {line.substr(0, space), line.substr(space + 1)};
}

struct PatternDeleter {
  void operator()(void* code) const { pcre2_code_free(static_cast<pcre2_code*>(code)); }
};

std::shared_ptr<void> compile_pattern(const std::string& pattern, const std::string& source) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error, message.data(), message.size());
    throw InputError(source, "pre_tokenizer",
                     fmt::format("a pattern PCRE2 compiles; at {} of \"{}\": {}", offset, pattern,
                                 reinterpret_cast<const char*>(message.data())));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if it fails
  return {code, PatternDeleter{}};
}

}  // namespace

const std::string& byte_character(unsigned char byte) {
  return byte_characters()[byte];
}

std::unique_ptr<ByteLevelBpe> ByteLevelBpe::from_vocab_and_merges(const std::string& vocab_json,
                                                                  const std::string& merges_txt) {
  BpeVocabulary vocabulary;
  vocabulary.ids = read_vocab_object(parse_json(vocab_json, "a GPT-2 vocab.json"), vocab_json, "");
  std::istringstream lines(read_input_file(merges_txt, kMaxSpecFileBytes, "a GPT-2 merges.txt"));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.starts_with("#version"))) continue;
    vocabulary.merges.push_back(split_merge(line, merges_txt, fmt::format("line {}", number)));
  }
  if (const auto eot = vocabulary.ids.find(kGpt2EndOfText); eot != vocabulary.ids.end()) {
    vocabulary.added_tokens.emplace_back(eot->first, eot->second);
  }
  return std::make_unique<ByteLevelBpe>(std::move(vocabulary), vocab_json);
}

std::unique_ptr<ByteLevelBpe> ByteLevelBpe::from_tokenizer_json(const std::string& path) {
  const auto json = parse_json(path, "a Hugging Face tokenizer.json");
  const auto& model = json.contains("model") ? json["model"] : nlohmann::json();
  if (!model.is_object() || model.value("type", "") != "BPE") {
    throw InputError(path, "model.type",
                     "\"BPE\" (byte-level BPE; a SentencePiece tokenizer is read from its "
                     "tokenizer.model)");
  }
  BpeVocabulary vocabulary;
  vocabulary.splitting = read_text_splitting(json, path);
  if (model.contains("ignore_merges")) {
    if (!model["ignore_merges"].is_boolean()) {
      throw InputError(path, "model.ignore_merges", "true or false");
    }
    vocabulary.ignore_merges = model["ignore_merges"].get<bool>();
  }
  vocabulary.ids = read_vocab_object(model.value("vocab", nlohmann::json()), path, "model.vocab");
  const auto& merges = model.contains("merges") ? model["merges"] : nlohmann::json();
  if (!merges.is_array()) throw InputError(path, "model.merges", "an array of merges");
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string where = fmt::format("model.merges[{}]", i);
    const auto& merge = merges[i];
    // "left right" (tokenizers before 0.20) or ["left", "right"].
    if (merge.is_string()) {
      vocabulary.merges.push_back(split_merge(merge.get<std::string>(), path, where));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      vocabulary.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      throw InputError(path, where, "\"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]");
    }
  }
  if (json.contains("added_tokens") && json["added_tokens"].is_array()) {
    for (size_t i = 0; i < json["added_tokens"].size(); ++i) {
      const auto& added = json["added_tokens"][i];
      if (!added.is_object() || !added.contains("id") || !added["id"].is_number_integer() ||
          added["id"].get<int64_t>() < 0 || !added.contains("content") ||
          !added["content"].is_string() || added["content"].get<std::string>().empty()) {
        throw InputError(path, fmt::format("added_tokens[{}]", i),
                         "{\"id\": ID (0 or more), \"content\": TEXT (not empty), …}");
      }
      vocabulary.added_tokens.emplace_back(added["content"].get<std::string>(),
                                           added["id"].get<int64_t>());
    }
  }
  return std::make_unique<ByteLevelBpe>(std::move(vocabulary), path);
}

ByteLevelBpe::ByteLevelBpe(BpeVocabulary vocabulary, std::string source)
    : source_(std::move(source)),
      ids_(std::move(vocabulary.ids)),
      added_tokens_(std::move(vocabulary.added_tokens)),
      nfc_(vocabulary.splitting.nfc),
      ignore_merges_(vocabulary.ignore_merges),
      pattern_(compile_pattern(vocabulary.splitting.pattern, source_)) {
  int64_t size = 0;
  for (const auto& [token, id] : ids_) size = std::max(size, id + 1);
  for (const auto& [content, id] : added_tokens_) size = std::max(size, id + 1);
  tokens_.resize(static_cast<size_t>(size));
  is_added_.resize(static_cast<size_t>(size));
  for (const auto& [token, id] : ids_) tokens_[static_cast<size_t>(id)] = token;
  for (const auto& [content, id] : added_tokens_) {
    tokens_[static_cast<size_t>(id)] = content;
    is_added_[static_cast<size_t>(id)] = true;
    if (content == kGpt2EndOfText || content == kLlama3EndOfText) end_of_text_ = id;
  }
  // Every byte must have a token, or some text could not be encoded.
  for (int b = 0; b < 256; ++b) {
    if (!ids_.contains(byte_character(static_cast<unsigned char>(b)))) {
      throw InputError(source_, "",
                       fmt::format("a byte-level vocabulary with a token for every byte; byte "
                                   "{} (\"{}\") has none",
                                   b, byte_character(static_cast<unsigned char>(b))));
    }
  }
  for (size_t rank = 0; rank < vocabulary.merges.size(); ++rank) {
    const auto& [left, right] = vocabulary.merges[rank];
    if (!ids_.contains(left + right)) {
      throw InputError(
          source_, fmt::format("merge {}", rank + 1),
          fmt::format("a merge whose result \"{}\" is in the vocabulary", left + right));
    }
    merge_ranks_.emplace(left + " " + right, static_cast<int>(rank));
  }
  // The identity is the content's, in id and rank order: the same whichever files hold it.
  uint32_t crc = 0;
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string entry = fmt::format("{}{}{}\n", id, is_added_[id] ? '+' : ' ', tokens_[id]);
    crc = crc32(entry.data(), entry.size(), crc);
  }
  for (const auto& [left, right] : vocabulary.merges) {
    const std::string entry = left + " " + right + "\n";
    crc = crc32(entry.data(), entry.size(), crc);
  }
  // How text is cut counts too: the same vocabulary under another pattern gives other ids.
  // GPT-2's own adds nothing, so its files keep the identity they always had.
  if (vocabulary.splitting.pattern != kGpt2Pattern || nfc_ || ignore_merges_) {
    const std::string entry = fmt::format("{}\n{}{}\n", vocabulary.splitting.pattern,
                                          nfc_ ? "nfc " : "", ignore_merges_ ? "whole" : "");
    crc = crc32(entry.data(), entry.size(), crc);
  }
  identity_ = fmt::format("byte-level BPE, {} tokens, CRC-32 {:08x}", vocab_size(), crc);
  // Longest first, so that one added token inside another matches the outer one.
  std::sort(added_tokens_.begin(), added_tokens_.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

ByteLevelBpe::~ByteLevelBpe() = default;

std::vector<int64_t> ByteLevelBpe::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  size_t done = 0;
  while (done < text.size()) {
    // The next added token ("<|endoftext|>") in the text, matched whole.
    size_t found = std::string_view::npos;
    const std::pair<std::string, int64_t>* which = nullptr;
    for (const auto& added : added_tokens_) {
      const size_t at = text.find(added.first, done);
      if (at < found) {
        found = at;
        which = &added;
      }
    }
    encode_plain(text.substr(done, found == std::string_view::npos ? found : found - done), ids);
    if (which == nullptr) break;
    ids.push_back(which->second);
    done = found + which->first.size();
  }
  return ids;
}

void ByteLevelBpe::encode_plain(std::string_view raw, std::vector<int64_t>& ids) const {
  // Added tokens are matched in the text as given; the rest is normalized first.
  const std::string normalized = nfc_ ? to_nfc(raw, source_) : std::string();
  const std::string_view text = nfc_ ? std::string_view(normalized) : raw;
  auto* code = static_cast<pcre2_code*>(pattern_.get());
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    // The text's UTF-8 is checked once, at the first match.
    const int rc = pcre2_match(code, subject, text.size(), offset,
                               offset == 0 ? 0 : PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      encode_piece(text.substr(offset), ids);
      return;
    }
    if (rc < 0) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(rc, message.data(), message.size());
      throw InputError(source_, "",
                       fmt::format("UTF-8 text to encode ({} at byte {})",
                                   reinterpret_cast<const char*>(message.data()),
                                   pcre2_get_startchar(match.get())));
    }
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(match.get());
    // Every character matches one of the pattern's branches, so nothing falls between
    // matches; were it to, it is still encoded.
    if (range[0] > offset) encode_piece(text.substr(offset, range[0] - offset), ids);
    encode_piece(text.substr(range[0], range[1] - range[0]), ids);
    offset = range[1];
  }
}

void ByteLevelBpe::encode_piece(std::string_view piece, std::vector<int64_t>& ids) const {
  if (piece.empty()) return;
  const std::string key(piece);
  {
    std::lock_guard lock(cache_mutex_);
    if (const auto hit = cache_.find(key); hit != cache_.end()) {
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<int64_t> merged;
  if (ignore_merges_) {
    std::string whole;
    for (char c : piece) whole += byte_character(static_cast<unsigned char>(c));
    if (const auto found = ids_.find(whole); found != ids_.end()) merged.push_back(found->second);
  }
  if (merged.empty()) merged = merge(piece);
  ids.insert(ids.end(), merged.begin(), merged.end());
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kPieceCacheEntries) cache_.clear();
  cache_.emplace(key, std::move(merged));
}

// GPT-2's bpe(): merge the lowest-ranked neighbouring pair everywhere it occurs, again
// until no neighbours form a listed pair.
std::vector<int64_t> ByteLevelBpe::merge(std::string_view piece) const {
  std::vector<std::string> symbols;
  symbols.reserve(piece.size());
  for (char c : piece) symbols.push_back(byte_character(static_cast<unsigned char>(c)));
  while (symbols.size() > 1) {
    int best = std::numeric_limits<int>::max();
    std::string best_left;
    std::string best_right;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto rank = merge_ranks_.find(symbols[i] + " " + symbols[i + 1]);
      if (rank != merge_ranks_.end() && rank->second < best) {
        best = rank->second;
        best_left = symbols[i];
        best_right = symbols[i + 1];
      }
    }
    if (best == std::numeric_limits<int>::max()) break;
    std::vector<std::string> next;
    next.reserve(symbols.size());
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == best_left && symbols[i + 1] == best_right) {
        next.push_back(best_left + best_right);
        ++i;
      } else {
        next.push_back(std::move(symbols[i]));
      }
    }
    symbols = std::move(next);
  }
  std::vector<int64_t> ids;
  ids.reserve(symbols.size());
  // Every symbol is a byte's character or a merge's result, both checked to be in the
  // vocabulary when it was read.
  for (const auto& symbol : symbols) ids.push_back(ids_.at(symbol));
  return ids;
}

std::string ByteLevelBpe::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size() || tokens_[static_cast<size_t>(id)].empty()) {
      throw InputError(source_, "", fmt::format("token ids in its vocabulary; found {}", id));
    }
    const std::string& token = tokens_[static_cast<size_t>(id)];
    if (is_added_[static_cast<size_t>(id)]) {
      text += token;
      continue;
    }
    for (size_t at = 0; at < token.size();) {
      const size_t length = character_length(static_cast<unsigned char>(token[at]));
      const auto byte = character_bytes().find(token.substr(at, length));
      if (byte == character_bytes().end()) {
        throw InputError(source_, fmt::format("token {}", id),
                         fmt::format("byte-level characters only; \"{}\" is not one", token));
      }
      text.push_back(static_cast<char>(byte->second));
      at += length;
    }
  }
  return text;
}

}  // namespace hyperpipe::tokenizers
