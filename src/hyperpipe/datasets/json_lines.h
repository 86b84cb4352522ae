// JSON lines: one JSON object per line, each a document whose text is one string field
// ("text" by default, Megatron's preprocess_data.py --json-keys). Read line by line, so a
// file far larger than memory streams through. No libtorch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hyperpipe::datasets {

inline constexpr char kDefaultJsonKey[] = "text";

// Whether `path` names JSON lines by its extension: .jsonl, .ndjson or .json.
bool is_json_lines(const std::string& path);

// Calls `document(text, line)` for every non-blank line's `key`, in file order (line counts
// from 1). InputError naming the file, the line and what it should hold when a line is not
// a JSON object with `key` a string, or the file cannot be read.
void for_each_json_line_text(
    const std::string& path, const std::string& key,
    const std::function<void(std::string_view text, int64_t line)>& document);

}  // namespace hyperpipe::datasets
