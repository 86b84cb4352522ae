#include "hyperpipe/datasets/json_lines.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/common/text_excerpt.h"

namespace hyperpipe::datasets {

bool is_json_lines(const std::string& path) {
  const auto extension = std::filesystem::path(path).extension();
  return extension == ".jsonl" || extension == ".ndjson" || extension == ".json";
}

void for_each_json_line_text(
    const std::string& path, const std::string& key,
    const std::function<void(std::string_view text, int64_t line)>& document) {
  require_regular_file(path, "JSON lines (one object per line)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "a JSON lines file we may read");
  std::string text;
  int64_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", number);
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(path, where, fmt::format("one JSON object per line: {}", e.what()));
    }
    if (!line.is_object() || !line.contains(key) || !line[key].is_string()) {
      throw InputError(path, where,
                       fmt::format("an object with a string \"{}\" (--json-key); got {}", key,
                                   printable_excerpt(text)));
    }
    document(line[key].get_ref<const std::string&>(), number);
  }
  if (in.bad()) throw InputError(path, fmt::format("line {}", number + 1), "a readable file");
}

}  // namespace hyperpipe::datasets
