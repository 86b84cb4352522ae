// Models small enough for a layer test to run in milliseconds.
#pragma once

#include <string>

#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::runtime::testing {

// A GPT, and a LLaMA with grouped-query attention.
inline const char* kGpt =
    "name: small-gpt\nflavour: gpt\nhidden: 64\nlayers: 3\nheads: 4\nvocab: 97\nseq_len: 16\n"
    "tied_embeddings: false\n";
inline const char* kLlama =
    "name: small-llama\nflavour: llama\nhidden: 64\nlayers: 2\nheads: 4\nkv_heads: 2\n"
    "ffn_hidden: 96\nvocab: 97\nseq_len: 16\ntied_embeddings: false\n";

inline model::Model small_model(const std::string& yaml) {
  return model::Model(model::read_model_yaml(YamlField::load_string(yaml, "small")));
}

}  // namespace hyperpipe::runtime::testing
