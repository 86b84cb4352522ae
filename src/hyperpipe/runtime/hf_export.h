// `hyperpipe export-checkpoint`: a HyperPipe checkpoint (any split, any tp) written back as
// a Hugging Face checkpoint directory: config.json and model.safetensors, or shards of at
// most a given size with model.safetensors.index.json, in the names and layouts of
// weights/hf_names.h turned around (Conv1D weights transposed back, q, k and v unstacked,
// rotary rows back in Hugging Face's order). In fp32 the tensors are the checkpoint's bit
// for bit, and `train --init-from` reads them back to the same parameters. One stage
// file and one shard are in memory at a time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/runtime/checkpoint.h"

namespace hyperpipe::runtime {

// transformers' save_pretrained default max_shard_size ("5GB").
inline constexpr uint64_t kHfDefaultMaxShardBytes = 5'000'000'000;

struct HfExportOptions {
  std::string dtype = "fp32";  // of the written tensors: fp32, bf16 or fp16
  uint64_t max_shard_bytes = kHfDefaultMaxShardBytes;
  // Replace an earlier export in the folder (its config.json, weights and index).
  bool overwrite = false;
  // The config.json of the Hugging Face checkpoint the model was read from, where it was:
  // the export keeps it (weights::hf_config_kept) rather than writing HyperPipe's own.
  std::optional<nlohmann::ordered_json> source_config;
};

struct HfExportSummary {
  std::string model_type;
  int64_t steps_done = 0;
  int64_t tensors = 0;
  uint64_t bytes = 0;              // of tensor data
  std::vector<std::string> files;  // written, config.json last
};

// Writes `checkpoint` of `model` (the model it was trained as) into `out_dir`. InputError
// when the checkpoint is of another model, a Hugging Face architecture cannot hold the
// model, a tensor is missing or shaped otherwise, or the folder holds an export and
// `overwrite` is not set. config.json is written last: a folder holding it is complete.
HfExportSummary export_hf_checkpoint(const CheckpointInfo& checkpoint,
                                     const model::TransformerConfig& model,
                                     const std::string& out_dir, const HfExportOptions& options);

}  // namespace hyperpipe::runtime
