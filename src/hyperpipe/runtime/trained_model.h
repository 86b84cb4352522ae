// The model a checkpoint was trained as, for `export-checkpoint`: the one named, else the
// one its plan names where that can still be read from here, with the Hugging Face
// config.json it was read from (an export keeps it: HfExportOptions::source_config).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/runtime/checkpoint.h"

namespace hyperpipe::runtime {

struct TrainedModel {
  model::TransformerConfig config;
  // Where it was read from a Hugging Face checkpoint: that checkpoint's config.json.
  std::optional<nlohmann::ordered_json> hf_config;
};

// The model `given` (a model spec, a catalogue name or a Hugging Face directory), else the
// plan's; throws InputError (naming --model) where the plan's cannot be read from here.
TrainedModel model_trained_as(const CheckpointInfo& checkpoint,
                              const std::optional<std::string>& given);

// The Hugging Face config.json a model was read from, where `name_or_path` (as
// model::load_model takes it, which has read it already) is one or its directory.
std::optional<nlohmann::ordered_json> hf_config_at(const std::string& name_or_path);

}  // namespace hyperpipe::runtime
