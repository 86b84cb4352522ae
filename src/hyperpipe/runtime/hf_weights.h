// A run that starts from a Hugging Face checkpoint's weights (`train --init-from DIR`):
// each process builds its own layers' parameters from the tensors that make them
// (weights/hf_names.h: Conv1D weights transposed, q, k and v stacked, rotary rows put in
// pair order), converted to the parameter's dtype and cut to its tensor-parallel shard.
// Only those tensors' bytes are read (the files are memory-mapped).
#pragma once

#include <string>

#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/weights/hf_checkpoint.h"

namespace hyperpipe::runtime {

// What the runtime computes, for refusing checkpoints whose config.json asks otherwise.
weights::HfComputation runtime_computation();

// Opens `dir` and checks that its model is `model` (the plan's) and computes as the
// runtime does; InputError naming the file and the difference.
weights::HfCheckpoint open_hf_checkpoint(const std::string& dir,
                                         const model::TransformerConfig& model);

// Replaces the executor's parameters (every chunk's) with the checkpoint's; AdamW starts
// afresh. InputError when a tensor is missing or its shape differs.
void load_hf_weights(const std::string& dir, Executor& executor,
                     const model::TransformerConfig& model);

}  // namespace hyperpipe::runtime
