// A Hugging Face checkpoint's directory: config.json and the weights, in one
// model.safetensors or in shards named by model.safetensors.index.json's weight_map. A
// tensor's file is opened (memory-mapped) when a tensor of it is first asked for, so a
// pipeline stage maps only the files of its own layers and reads only their pages. Plain
// bytes: no libtorch (the runtime turns them into tensors, runtime/hf_weights.h).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/weights/hf_names.h"
#include "hyperpipe/weights/safetensors.h"

namespace hyperpipe::weights {

inline constexpr const char* kHfWeightsFile = "model.safetensors";
inline constexpr const char* kHfWeightsIndexFile = "model.safetensors.index.json";

// The constants of the computation the runtime runs: a checkpoint whose config.json asks
// for others (another dropout rate; an activation, rotary scaling or sliding window the
// runtime does not compute) would not compute the same logits, and is refused. Norm
// epsilons and the rotary base are the model's own (model::TransformerConfig).
struct HfComputation {
  double dropout_rate = 0;  // where a model has dropout (GPT-2's pdrops)
};

// One tensor as found: its header entry, bytes and file (for messages).
struct HfTensor {
  const TensorEntry* entry = nullptr;
  std::span<const std::byte> bytes;
  std::string file;
};

class HfCheckpoint {
 public:
  // Reads `dir`/config.json and finds the weight files; InputError naming the file and
  // what is wrong (no config, no weights, a model_type not loadable yet, a setting that
  // changes the computation from `computation`'s).
  HfCheckpoint(const std::string& dir, const HfComputation& computation);

  const std::string& dir() const { return dir_; }
  const model::TransformerConfig& config() const { return config_; }
  HfArchitecture architecture() const { return architecture_; }

  // The tensor `source` names, checked against its dtype family (floating point) and
  // shape; InputError naming the file and tensor when it is missing or differs.
  HfTensor tensor(const HfSource& source) const;

 private:
  const SafetensorsFile& file(const std::string& name) const;

  std::string dir_;
  model::TransformerConfig config_;
  HfArchitecture architecture_ = HfArchitecture::kGpt2;
  std::map<std::string, std::string> weight_map_;  // tensor name → file name
  std::set<std::string> names_;
  mutable std::map<std::string, std::unique_ptr<SafetensorsFile>> open_;
};

// Why a model of `planned` cannot take weights of a checkpoint of `found` (the first field
// that differs), or nothing when it can.
std::optional<std::string> hf_model_mismatch(const model::TransformerConfig& planned,
                                             const model::TransformerConfig& found);

}  // namespace hyperpipe::weights
