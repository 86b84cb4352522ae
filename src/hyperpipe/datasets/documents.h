// The documents of a raw training file, before tokenization: a text file is one document;
// JSON lines (json_lines.h) hold one per line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hyperpipe::datasets {

// Calls `document(text, line)` for each document of `path` in file order (`line`: its line
// in JSON lines, 1 for a text file). InputError naming the file when it cannot be read.
void for_each_document(const std::string& path, const std::string& json_key,
                       const std::function<void(std::string_view text, int64_t line)>& document);

}  // namespace hyperpipe::datasets
