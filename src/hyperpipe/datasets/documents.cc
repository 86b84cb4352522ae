#include "hyperpipe/datasets/documents.h"

#include "hyperpipe/common/input_file.h"
#include "hyperpipe/datasets/json_lines.h"

namespace hyperpipe::datasets {

void for_each_document(const std::string& path, const std::string& json_key,
                       const std::function<void(std::string_view text, int64_t line)>& document) {
  if (is_json_lines(path)) {
    for_each_json_line_text(path, json_key, document);
    return;
  }
  document(read_input_file(path, kMaxCorpusBytes, "the training data (a text file)"), 1);
}

}  // namespace hyperpipe::datasets
