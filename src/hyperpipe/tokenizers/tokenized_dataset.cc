#include "hyperpipe/tokenizers/tokenized_dataset.h"

#include <filesystem>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"

namespace hyperpipe::tokenizers {

datasets::TokenDtype best_fitting_dtype(int64_t vocab_size) {
  return vocab_size < kUint16VocabularyLimit ? datasets::TokenDtype::kU16
                                             : datasets::TokenDtype::kI32;
}

TokenizedDataset write_tokenized_dataset(const std::vector<std::string>& inputs,
                                         const Tokenizer& tokenizer, const TokenizeOptions& options,
                                         const std::string& prefix) {
  const auto folder = std::filesystem::path(prefix).parent_path();
  std::error_code error;
  if (!folder.empty()) std::filesystem::create_directories(folder, error);
  if (error) {
    throw InputError("--output-prefix", prefix,
                     "a prefix in a folder that can be made and written: " + error.message());
  }
  const auto dtype = best_fitting_dtype(tokenizer.vocab_size());
  datasets::IndexedDatasetWriter writer(prefix, dtype);
  for (const auto& input : inputs) {
    tokenize_documents(input, tokenizer, options, [&](std::vector<int64_t>&& ids) {
      writer.add_sequence(ids);
      writer.end_document();
    });
    log().info("tokenize: {} read ({} documents, {} tokens so far)", input, writer.documents(),
               writer.tokens());
  }
  writer.finish();
  return {dtype, writer.documents(), writer.tokens()};
}

}  // namespace hyperpipe::tokenizers
