// A Hugging Face config.json for a HyperPipe model: what `hyperpipe export-checkpoint`
// writes beside the weights, so that Hugging Face's own classes (GPT2LMHeadModel,
// LlamaForCausalLM) and HyperPipe's reader (model_loader's --model DIR, hf_checkpoint.h)
// build the same model computing as the runtime does. No libtorch.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/weights/hf_checkpoint.h"
#include "hyperpipe/weights/hf_names.h"

namespace hyperpipe::weights {

// The Hugging Face architecture that holds a model of `config`: GPT-2 for the GPT flavour,
// LLaMA for the LLaMA flavour; nothing (and `why_not`) for a shape no config.json of them
// says (OPT's projected embeddings or position offset, no final norm).
std::optional<HfArchitecture> hf_export_architecture(const model::TransformerConfig& config,
                                                     std::string* why_not = nullptr);

// config.json's fields for `config` as `architecture`, with the runtime's `computation`
// constants and the weights' `torch_dtype` ("float32", "bfloat16", "float16").
nlohmann::ordered_json hf_config_json(const model::TransformerConfig& config,
                                      HfArchitecture architecture, const HfComputation& computation,
                                      const std::string& torch_dtype);

// The config.json of the Hugging Face checkpoint a model was read from, kept for its
// export: its architecture (a Mistral stays a Mistral) and every field HyperPipe does not
// read (token ids, a window the run never reaches) as they were; only the weights' type is
// `torch_dtype`, under the key the file used (transformers 4's torch_dtype, 5's dtype).
nlohmann::ordered_json hf_config_kept(nlohmann::ordered_json source,
                                      const std::string& torch_dtype);

}  // namespace hyperpipe::weights
