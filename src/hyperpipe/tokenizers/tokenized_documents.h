// A raw training file (text or JSON lines, datasets/documents.h) through a tokenizer,
// document by document: what `hyperpipe tokenize` writes as an indexed dataset and what
// `train --tokenizer` trains on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hyperpipe/datasets/json_lines.h"
#include "hyperpipe/tokenizers/tokenizer.h"

namespace hyperpipe::tokenizers {

struct TokenizeOptions {
  std::string json_key = datasets::kDefaultJsonKey;
  // The tokenizer's end-of-document token after each document (Megatron's --append-eod).
  bool append_end_of_document = false;
};

// Calls `document(ids)` with each document's token ids, in file order. InputError when the
// file cannot be read, a line is not what it should be, or the end of document is asked of
// a tokenizer that has none.
void tokenize_documents(const std::string& path, const Tokenizer& tokenizer,
                        const TokenizeOptions& options,
                        const std::function<void(std::vector<int64_t>&& ids)>& document);

}  // namespace hyperpipe::tokenizers
