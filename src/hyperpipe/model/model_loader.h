// Models from the catalogue, from a YAML file, or from a Hugging Face config.json.
#pragma once

#include <string>

#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::model {

// The file a Hugging Face checkpoint's directory describes its model in.
inline constexpr const char* kHfConfigFile = "config.json";

// `name_or_path` is a catalogue name (see `hyperpipe models`), a path to a model file (our
// YAML format, or a Hugging Face config.json, recognised by its `model_type`) or a Hugging
// Face checkpoint's directory (its config.json).
// Throws InputError naming the file and field on any problem.
Model load_model(const std::string& name_or_path);

// Our YAML format (docs/formats.md): the fields of TransformerConfig, optionally on top
// of a catalogue model named by `base`.
TransformerConfig read_model_yaml(const YamlField& root);

// Hugging Face config.json of GPT-2, OPT and LLaMA-family models (model_type "gpt2",
// "opt", "llama", "mistral").
TransformerConfig read_hf_config(const YamlField& root);

}  // namespace hyperpipe::model
