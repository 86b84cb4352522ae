// Raw training files through a tokenizer into a Megatron-LM indexed dataset, as Megatron's
// tools/preprocess_data.py writes one (`hyperpipe tokenize`): a document per text file or
// JSON line, ids in the smallest type the vocabulary fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "hyperpipe/tokenizers/tokenized_documents.h"
#include "hyperpipe/tokenizers/tokenizer.h"

namespace hyperpipe::tokenizers {

// Megatron's best_fitting_dtype: uint16 below this vocabulary size, int32 from it on.
inline constexpr int64_t kUint16VocabularyLimit = 65500;

datasets::TokenDtype best_fitting_dtype(int64_t vocab_size);

struct TokenizedDataset {
  datasets::TokenDtype dtype;
  int64_t documents = 0;
  int64_t tokens = 0;
};

// Writes `inputs`, in order, as PREFIX.bin and PREFIX.idx (PREFIX's folder made where it is
// missing). InputError naming --output-prefix where that folder cannot be made, and those
// of tokenize_documents and the writer; on failure neither file is left behind.
TokenizedDataset write_tokenized_dataset(const std::vector<std::string>& inputs,
                                         const Tokenizer& tokenizer, const TokenizeOptions& options,
                                         const std::string& prefix);

}  // namespace hyperpipe::tokenizers
