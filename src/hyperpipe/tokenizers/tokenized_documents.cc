#include "hyperpipe/tokenizers/tokenized_documents.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/datasets/documents.h"

namespace hyperpipe::tokenizers {

void tokenize_documents(const std::string& path, const Tokenizer& tokenizer,
                        const TokenizeOptions& options,
                        const std::function<void(std::vector<int64_t>&& ids)>& document) {
  const auto end = tokenizer.end_of_document();
  if (options.append_end_of_document && !end) {
    throw InputError("--append-eod", "",
                     fmt::format("a tokenizer with an end-of-document token; {} has none",
                                 tokenizer.describe()));
  }
  datasets::for_each_document(path, options.json_key, [&](std::string_view text, int64_t line) {
    std::vector<int64_t> ids;
    try {
      ids = tokenizer.encode(text);
    } catch (const InputError& e) {
      throw InputError(path, fmt::format("line {}", line), e.what());
    }
    if (options.append_end_of_document) ids.push_back(*end);
    document(std::move(ids));
  });
}

}  // namespace hyperpipe::tokenizers
