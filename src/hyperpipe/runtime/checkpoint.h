// Checkpoints that outlive the split they were written with: every parameter and its
// AdamW state is stored under its layer's name ("layer7.qkv"), one file per pipeline stage,
// so a run with another plan of the same model can load them; tensor-parallel shards
// write and read whole tensors too, so the tp may change as well. A checkpoint is complete
// once its manifest exists: files are written to temporary names and renamed, their
// CRC-32s go into the manifest, and the manifest is renamed into place last.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/executor.h"

namespace hyperpipe::runtime {

inline constexpr const char* kCheckpointFormat = "hyperpipe.checkpoint/1";
inline constexpr const char* kCheckpointManifest = "checkpoint.json";

struct CheckpointInfo {
  std::string path;  // the step's directory
  int64_t steps_done = 0;
  nlohmann::json manifest;
};

// Collective: the first data-parallel rank of each device group of the plan's own
// pipeline writes its chunks, then rank 0 the manifest (with the plan document and the
// run's identity, checkpoint_directory.h), in `dir`/step-NNNNNNNN.
void save_checkpoint(const std::string& dir, int64_t steps_done, const Executor& executor,
                     Communicator& communicator, const RankLayout& layout,
                     const nlohmann::json& plan, const std::string& model_name,
                     const nlohmann::json& run);

// The checkpoint with the most steps in `dir` whose manifest exists (incomplete ones,
// without it, are passed over), its files checked against their CRC-32s; a corrupt or
// truncated one gives way, with a warning, to the newest intact one. nullopt when there is
// none; InputError naming the newest's bad file when none is intact. Manifests may name
// only plain files inside their own directory.
std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir);

// Parameters and optimizer state for the executor's chunks, from a checkpoint of any
// split of the same model. Throws InputError when the model differs or a layer is missing.
void load_checkpoint(const CheckpointInfo& checkpoint, Executor& executor,
                     const std::string& model_name);

}  // namespace hyperpipe::runtime
