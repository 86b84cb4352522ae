#include "hyperpipe/common/text_excerpt.h"

#include <fmt/format.h>

namespace hyperpipe {
namespace {

// Length of the valid UTF-8 sequence starting at text[at], or 0 if it is not one
// (overlong forms and surrogates included, as RFC 3629 rules them out).
size_t utf8_sequence(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

bool is_control(unsigned char c) {
  return c < 0x20 || c == 0x7F;
}

std::string escaped(std::string_view text, size_t max_chars, bool keep_lines) {
  std::string out;
  size_t shown = 0;
  for (size_t at = 0; at < text.size();) {
    if (shown == max_chars) return out + "...";
    const auto c = static_cast<unsigned char>(text[at]);
    const size_t length = utf8_sequence(text, at);
    if (length == 1 && (!is_control(c) || (keep_lines && (c == '\n' || c == '\t')))) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (length <= 1) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.append(text.substr(at, length));
    }
    at += length == 0 ? 1 : length;
    ++shown;
  }
  return out;
}

}  // namespace

std::string printable_excerpt(std::string_view text, size_t max_chars) {
  return escaped(text, max_chars, /*keep_lines=*/false);
}

std::string printable_message(std::string_view text) {
  return escaped(text, std::string_view::npos, /*keep_lines=*/true);
}

bool is_printable_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence(text, at);
    if (length == 0 || (length == 1 && is_control(static_cast<unsigned char>(text[at])))) {
      return false;
    }
    at += length;
  }
  return true;
}

}  // namespace hyperpipe
