// Echoing what a user's file says back in a message, safely: a short excerpt, with control
// characters and bytes that are not UTF-8 written as escapes, so binary garbage never
// reaches the terminal raw and a file named by mistake is never printed at length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hyperpipe {

// Longest excerpt of a value echoed in an error message.
inline constexpr size_t kMaxExcerptChars = 40;

// `text` with control characters as \n, \t, \xNN, invalid UTF-8 bytes as \xNN, and cut
// after `max_chars` characters (marked by "...").
std::string printable_excerpt(std::string_view text, size_t max_chars = kMaxExcerptChars);

// The whole of `text` escaped the same way, but with its line breaks and tabs kept: for
// messages that quote what a user gave (a path on the command line) as they reach a terminal.
std::string printable_message(std::string_view text);

// True if `text` is valid UTF-8 with no control characters.
bool is_printable_utf8(std::string_view text);

}  // namespace hyperpipe
